"""Shared pieces of the batch tests: the rows, the settings and an in-process oracle."""
from __future__ import annotations

import json
import math
import re

#: The tiny word list of the test artifact.
WORDS = ["a", "cat", "dog", "the", "sat", "on", "mat", "and", "ran"]

SEARCH = dict(beam_size=3, max_new_tokens=8)

#: (prompt, per-row phrases) cycled to make inputs: rows with and without their own phrases
PROMPTS = [("the cat", ["dog"]), ("a", []), ("on a", ["mat"]), ("the dog ran", ["cat", "sat"]), ("and", [])]


def make_rows(n: int) -> list[dict]:
    return [{"prompt": PROMPTS[i % len(PROMPTS)][0], "phrases": PROMPTS[i % len(PROMPTS)][1]} for i in range(n)]


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def read_shards(out_dir) -> list[dict]:
    rows = []
    for f in sorted(out_dir.glob("rows-*.jsonl")):
        rows += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
    return rows


def oracle(model_dir, artifact, rows):
    """``Decoder.generate`` on the same rows, each with ``with_request`` of its own phrases, with
    the prompt format's preset (what every door applies)."""
    import fstbeam

    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw")
    base = fstbeam.load_constraints(artifact, tokenizer=dec.tokenizer)
    cons = [fstbeam.with_request(base, phrases=r.get("phrases") or (), avoid=r.get("avoid") or (), prefix=r.get("prefix"))
            if (r.get("phrases") or r.get("avoid") or r.get("prefix")) else base for r in rows]
    return dec.generate([r["prompt"] for r in rows], cons, preset="auto", **SEARCH)


def assert_same(out: dict, res) -> None:
    """An output row equals a GenerationResult (scores to float tolerance)."""
    assert out["text"] == res.text
    assert out["satisfied"] == res.satisfied and out["finish_reason"] == res.finish_reason
    assert out["phrases_met"] == list(res.phrases_met)
    assert math.isclose(out["score"], res.score, rel_tol=1e-5, abs_tol=1e-5)
    assert math.isclose(out["logprob"], res.logprob, rel_tol=1e-5, abs_tol=1e-5)


def check_constraints(out: dict, row: dict) -> None:
    """A satisfied output obeys its row's constraints, checked on the text itself."""
    if not out["satisfied"]:
        return
    text = out["text"]
    assert all(w in WORDS for w in re.findall(r"[a-z]+", text.lower())), text
    for p in row.get("phrases") or ():
        assert re.search(rf"(?<![A-Za-z0-9]){re.escape(p)}(?![A-Za-z0-9])", text), (p, text)
    for a in row.get("avoid") or ():
        assert a not in text, (a, text)
    if row.get("prefix"):
        assert text.startswith(row["prefix"]), (row["prefix"], text)


_SCORES = ("score", "logprob")


def assert_same_rows(got: list[dict], want: list[dict]) -> None:
    """Output rows equal field for field (n-best lists included), scores to float noise: a
    batch composed differently runs the model's matrix products over other row counts, and MKL
    sums small row counts in another order (about 1e-6; as :func:`assert_same`)."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert len(a.get("nbest") or []) == len(b.get("nbest") or [])
        for x, y in [(a, b)] + list(zip(a.get("nbest") or [], b.get("nbest") or [])):
            assert {k: v for k, v in x.items() if k not in _SCORES + ("nbest",)} == \
                {k: v for k, v in y.items() if k not in _SCORES + ("nbest",)}
            for key in _SCORES:
                if key in x or key in y:
                    assert (x[key] is None) == (y[key] is None), key
                    if x[key] is not None:
                        assert math.isclose(x[key], y[key], rel_tol=1e-5, abs_tol=1e-5), (key, x[key], y[key])
