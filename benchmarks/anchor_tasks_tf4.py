"""The transformers 4.x peer of bench_tasks: ``force_words_ids`` beam search with disjunctive
constraints (every alternative of a constraint, with and without a leading space, and
capitalized where a sentence may start with it) on the default model, in a separate venv (set
up as in anchor_tf4.py).

    /work/venv-tf4/bin/python benchmarks/anchor_tasks_tf4.py IN.json OUT.json

IN.json: {"model": folder, "max_new_tokens": M, "beam": B, "jobs": [{"prompt", "constraints":
[[alternative, ...], ...], "sentence_case": bool}]}. length_penalty 0 (log-probability ranking).
It stops where fstbeam's ``stop_at="line"`` output ends for the reader: every token that holds a
newline ends the output (its text before the newline is kept), as does EOS.
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def spellings(tok, alts: list[str], sentence_case: bool) -> list[list[int]]:
    """Token sequences of every spelling, without one that has another as a prefix (transformers'
    DisjunctiveConstraint refuses those; the shorter one already meets the constraint)."""
    texts = []
    for a in alts:
        forms = [a, a[:1].upper() + a[1:]] if sentence_case else [a]
        for f in forms:
            texts += [" " + f, f]
    seqs = []
    for t in texts:
        ids = tok(t, add_special_tokens=False).input_ids
        if ids and ids not in seqs:
            seqs.append(ids)
    return [s for s in seqs if not any(o != s and s[: len(o)] == o for o in seqs)]


def main(src: str, dst: str) -> None:
    warnings.simplefilter("ignore")
    spec = json.loads(open(src).read())
    tok = AutoTokenizer.from_pretrained(spec["model"])
    model = AutoModelForCausalLM.from_pretrained(spec["model"], torch_dtype=torch.float32).eval()
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    stops = {tok.eos_token_id} | {i for i, t in enumerate(vocab) if t and ("\n" in t or "\u010a" in t)}
    eos = sorted(stops)
    outs = []
    for job in spec["jobs"]:
        enc = tok(job["prompt"], return_tensors="pt")
        force = [spellings(tok, alts, job.get("sentence_case", False)) for alts in job["constraints"]]
        force = [f if len(f) > 1 else f[0] for f in force if f]
        kw = {"force_words_ids": force} if force else {}
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, num_beams=spec.get("beam", 5), max_new_tokens=spec["max_new_tokens"], do_sample=False,
                                 length_penalty=0.0, eos_token_id=eos, pad_token_id=0, **kw)
        ids, ended, tail = [], False, ""
        for x in out[0, enc["input_ids"].shape[1]:].tolist():
            if x in stops:
                ended = True
                if x != tok.eos_token_id:
                    tail = tok.decode([x]).split("\n")[0]
                break
            ids.append(x)
        outs.append({"ids": ids, "ended": ended, "text": tok.decode(ids, skip_special_tokens=True) + tail,
                     "seconds": time.perf_counter() - t0})
    json.dump({"version": transformers.__version__, "method": "generate(num_beams=B, force_words_ids=[[disjunctive]])",
               "outputs": outs}, open(dst, "w"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
