"""Cost of passing a Hugging Face tokenizer object to `compile_constraints` instead of a Vocab.

Issue 10's target: on the second and later calls, at most 0.3 s more than with a Vocab (before
the `Compiler` registry every call rebuilt the vocabulary: +2.1-2.4 s on Gemma). Calls are
interleaved (Vocab, HF, Vocab, HF, ...) so machine noise hits both sides alike.

    python benchmarks/bench_compiler_reuse.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import fstbeam
    from fstbeam.files.default_model import load_default_tokenizer

    hf = load_default_tokenizer()
    vocab = fstbeam.load_vocab("default")
    spec = dict(cefr="A1", phrases=["my family"], leading_space=True)
    t = time.perf_counter()
    fstbeam.compile_constraints(tokenizer=hf, **spec)
    first_hf = time.perf_counter() - t
    rows = {"vocab": [], "hf": []}
    for _ in range(args.rounds):
        for name, tok in (("vocab", vocab), ("hf", hf)):
            t = time.perf_counter()
            fstbeam.compile_constraints(tokenizer=tok, **spec)
            rows[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in rows.items()}
    out = {
        "first_call_hf_s": round(first_hf, 3),
        "median_vocab_s": round(med["vocab"], 3),
        "median_hf_s": round(med["hf"], 3),
        "extra_hf_s": round(med["hf"] - med["vocab"], 3),
        "rounds": args.rounds,
    }
    print(f"{'':24}{'seconds':>10}")
    for k, v in out.items():
        print(f"{k:24}{v:>10}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compiler_reuse.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
