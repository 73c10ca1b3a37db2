"""bench_structured --e2e N: decode N schemas with the default model (Gemma 3 270M) and check what
comes out with fstbeam's output check (`json_problem`: `jsonschema` for the schema's own draft, formats checked,
numbers compared as decimals, patterns read as ECMA-262).

- fstbeam: ``Decoder().generate(prompt, compile_constraints(json_schema=schema), beam_size=5,
  max_new_tokens=M)``;
- the anchor: transformers ``model.generate`` (greedy, and beam 5) with a logits processor that
  masks through llguidance (the same compact JSON options as bench_structured's llguidance row).
  Beam search needs a matcher per hypothesis; the processor keeps one per generated prefix
  (``deep_copy`` of the parent's, one token consumed), since transformers reorders beams freely.

One prompt per schema (the chat template): function-call schemas (GlaiveAI) ask for the call's
arguments, the others for one document of the schema. M = the longest valid test instance's
tokens x 2 + 16, between 64 and 256, the same for every engine. The N schemas: a stratified pick
among the sample's schemas whose compact text is at most 4,000 characters (the prompt's length).
"""
from __future__ import annotations

import json
import time
from typing import Any

from structured_data import stratified
from structured_engines import fstbeam_compile

SCHEMA_CHARS = 4000


def prompt_for(case: Any) -> str:
    schema = json.dumps(case.schema, separators=(",", ":"), ensure_ascii=False)
    if case.source == "Glaiveai2K":
        fn = case.name.split("---", 1)[1].rsplit("_", 1)[0]
        return (f"Call the function `{fn}` for a typical user request. Its parameters follow this JSON Schema:\n{schema}\n"
                "Reply with the call's arguments as one JSON object, nothing else.")
    return f"Write one realistic JSON document that is valid against this JSON Schema:\n{schema}\nReply with the JSON only."


def check(text: str, schema: Any) -> tuple[bool, bool, str]:
    """(parses, validates, why not): fstbeam's output check (`json_problem`: `jsonschema` for the
    schema's own draft, formats checked, numbers compared as the decimals written, patterns read
    as ECMA-262), the same for every engine's text."""
    from fstbeam.runtime.structured_check import json_problem

    try:
        problem = json_problem(json.dumps(schema), text)
    except Exception as exc:  # a schema jsonschema itself cannot use
        return True, False, f"validator: {type(exc).__name__}: {exc}"[:120]
    if problem is None:
        return True, True, ""
    return "not JSON" not in problem, False, problem[:120]


class LlguidanceProcessor:
    """A transformers logits processor: each row's allowed tokens from an llguidance matcher for
    its generated prefix (matchers kept per prefix, so beams may be reordered)."""

    def __init__(self, matcher: Any, prompt_len: int, width: int) -> None:
        import llguidance.numpy as lnp
        import numpy as np

        self.lnp, self.np = lnp, np
        self.prefix: dict[tuple[int, ...], Any] = {(): matcher}
        self.prompt_len = prompt_len
        self.buf = lnp.allocate_token_bitmask(1, width)

    def _matcher(self, key: tuple[int, ...]) -> Any:
        m = self.prefix.get(key)
        if m is None:
            parent = self._matcher(key[:-1])
            m = parent.deep_copy()
            m.consume_token(key[-1])
            self.prefix[key] = m
        return m

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for b in range(input_ids.shape[0]):
            m = self._matcher(tuple(input_ids[b, self.prompt_len:].tolist()))
            if m.is_error():
                scores[b, :] = -float("inf")
                continue
            self.lnp.fill_next_token_bitmask(m, self.buf, 0)
            bits = self.np.unpackbits(self.buf[0].view(self.np.uint8), bitorder="little")[: scores.shape[1]].astype(bool)
            scores[b, ~torch.from_numpy(bits)] = -float("inf")
        return scores


def run_e2e(cases: list[Any], n: int, beam: int = 5, anchors: bool = True) -> dict[str, Any]:
    """``anchors`` False: fstbeam alone (a rerun after a compiler change; the anchors' rows of an
    earlier run on the same schemas stay comparable, their packages unchanged)."""
    import llguidance
    import llguidance.hf
    import torch
    from tokenizers import Tokenizer
    from transformers import LogitsProcessorList

    import fstbeam
    from fstbeam.files.default_model import default_tokenizer_dir

    torch.set_num_threads(1)
    small = [c for c in cases if len(json.dumps(c.schema, separators=(",", ":"))) <= SCHEMA_CHARS]
    names = set(stratified([c.name for c in small], n))
    picked = [c for c in small if c.name in names]
    dec = fstbeam.Decoder(device="cpu")
    hf, model = dec.tokenizer, dec.model
    tok = Tokenizer.from_file(str(default_tokenizer_dir() / "tokenizer.json"))
    lltok = llguidance.hf.from_tokenizer(hf, n_vocab=dec.vocab_size)
    opts = {"item_separator": ",", "key_separator": ":", "whitespace_flexible": False}
    rows = []
    for c in picked:
        valid = [len(tok.encode(t, add_special_tokens=False).ids) for v, t in c.instances if v]
        m_new = min(256, max(64, 2 * max(valid, default=32) + 16))
        prompt = prompt_for(c)
        row: dict[str, Any] = {"schema": c.name, "max_new_tokens": m_new}
        t, cpu = time.perf_counter(), time.process_time()
        try:
            cc = fstbeam_compile(c.schema, dec.vocab)
            res = dec.generate([prompt], cc, beam_size=beam, max_new_tokens=m_new)[0]
            ok = check(res.text, c.schema)
            row["fstbeam"] = {"text": res.text[:400], "finish": str(res.finish_reason), "parses": ok[0], "valid": ok[1], "why": ok[2],
                              "seconds": round(time.perf_counter() - t, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}
        except Exception as exc:  # a schema fstbeam refuses: recorded, the anchor still runs
            row["fstbeam"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "seconds": round(time.perf_counter() - t, 2)}
        inp = torch.tensor([dec.encode(prompt)])  # the same chat-formatted prompt fstbeam decoded
        for label, beams in (("llguidance_greedy", 1), (f"llguidance_beam{beam}", beam)) if anchors else ():
            t, cpu = time.perf_counter(), time.process_time()
            try:
                grammar = llguidance.LLMatcher.grammar_from_json_schema(c.schema, overrides=opts)
                matcher = llguidance.LLMatcher(lltok, grammar, log_level=0)
                if matcher.is_error():
                    raise ValueError(matcher.get_error())
                proc = LlguidanceProcessor(matcher, inp.shape[1], dec.vocab_size)
                with torch.no_grad():
                    out = model.generate(inp, attention_mask=torch.ones_like(inp), max_new_tokens=m_new, num_beams=beams, do_sample=False,
                                         logits_processor=LogitsProcessorList([proc]), eos_token_id=list(dec.eos_ids),
                                         pad_token_id=dec.eos_ids[0])
                gen = [t for t in out[0, inp.shape[1]:].tolist() if t not in dec.eos_ids]
                text = dec.decode(gen)
                ended = len(out[0]) - inp.shape[1] < m_new or out[0, -1].item() in dec.eos_ids
                ok = check(text, c.schema)
                row[label] = {"text": text[:400], "finish": "eos" if ended else "length", "parses": ok[0], "valid": ok[1], "why": ok[2],
                              "seconds": round(time.perf_counter() - t, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}
            except Exception as exc:
                row[label] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "seconds": round(time.perf_counter() - t, 2)}
        rows.append(row)
        print(f"  e2e {c.name}: " + "  ".join(f"{k}={'ERR' if 'error' in v else ('valid' if v['valid'] else v['why'][:40])} {v['seconds']}s"
                                              for k, v in row.items() if isinstance(v, dict)), flush=True)
    return {"schemas": len(picked), "beam": beam, "rows": rows, "summary": summarize_e2e(rows)}


def summarize_e2e(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for key in sorted({k for r in rows for k, v in r.items() if isinstance(v, dict)}):
        got = [r[key] for r in rows if key in r]
        done = [g for g in got if "error" not in g]
        ended = [g for g in done if g["finish"] in ("eos", "FinishReason.EOS", "stop") or "eos" in g["finish"].lower()]
        out[key] = {
            "items": len(got), "refused": len(got) - len(done),
            "parses_pct": round(100 * sum(g["parses"] for g in done) / len(got), 1) if got else None,
            "valid_pct": round(100 * sum(g["valid"] for g in done) / len(got), 1) if got else None,
            "ended_within_limit": len(ended),
            "valid_of_ended_pct": round(100 * sum(g["valid"] for g in ended) / len(ended), 1) if ended else None,
            "seconds_per_item": round(sum(g["seconds"] for g in got) / len(got), 2) if got else None,
            "cpu_seconds_per_item": round(sum(g.get("cpu_seconds", g["seconds"]) for g in got) / len(got), 2) if got else None,
        }
    return out
