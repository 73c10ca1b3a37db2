"""Search errors and placement on a few CommonGen dev items (items 200+ only; never the first 100).

    python benchmarks/dev_search_errors.py --items 200:210 --out /tmp/dev.json

For each item: the unconstrained and the constrained (AnyOf of inflected forms per concept)
outputs with the ``fstbeam generate`` defaults, beam 5, stop at a newline; a *search error* is an
item whose unconstrained output already contains every concept (lemma check from the text) but
whose constrained output scores lower under the same objective (log-prob + r * min(l, |y|))."""
from __future__ import annotations

import argparse
import json
import re
import time
import warnings

SHOTS = [("dog, frisbee, catch, throw", "A man throws a frisbee and his dog catches it."),
         ("sit, bench, park", "An old man sits on a bench in the park."),
         ("cook, kitchen, pasta", "She is cooking pasta in the kitchen.")]


def prompt(concepts):
    shots = "".join(f"Words: {w}\nSentence: {s}\n\n" for w, s in SHOTS)
    return shots + f"Words: {', '.join(concepts)}\nSentence:"


def concept_forms(c, pos):
    from fstbeam.grammars.lib.inflection import forms, read_irregular

    irr = read_irregular()
    tags = {"N": ["PL"], "V": ["3SG", "PAST", "PPART", "ING"], "A": ["CMP", "SUP"]}.get(pos, ["PL", "3SG", "PAST", "ING"])
    out = {c}
    for t in tags:
        out |= forms([c], t, irr)
    return sorted(out)


def covered(text, forms_):
    return any(re.search(r"(?<![A-Za-z0-9'\-])" + re.escape(f) + r"(?![A-Za-z0-9\-]|'[A-Za-z])", text, re.I) for f in forms_)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/commongen_test300.jsonl")
    ap.add_argument("--items", default="200:210")
    ap.add_argument("--out", default=None)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--target", type=int, default=None, help="target_length (else the defaults' length_ratio)")
    args = ap.parse_args()
    from fstbeam.compiler.compile import compile_constraints
    from fstbeam.runtime import Decoder
    from fstbeam.runtime.defaults import generate_defaults

    a, b = (int(x) for x in args.items.split(":"))
    assert a >= 100, "never tune on the first 100 items"
    rows = [json.loads(l) for l in open(args.data)][a:b]
    dec = Decoder(device="cpu")
    opts = dict(generate_defaults(), beam_size=5, max_new_tokens=args.max_new_tokens, stop_at="line")
    if args.target:
        opts.update(target_length=args.target, length_ratio=None)
    out, t0 = [], time.time()
    for i, r in enumerate(rows):
        p = prompt(r["concepts"])
        fs = [concept_forms(c, pos[0]) for c, pos in zip(r["concepts"], r["pos"])]
        cc = compile_constraints(phrases=[f if len(f) > 1 else f[0] for f in fs], tokenizer=dec.vocab)
        ids = dec.encode(p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t1 = time.time()
            [u] = dec.generate([ids], None, **opts)
            t2 = time.time()
            [c] = dec.generate([ids], cc, **opts)
            t3 = time.time()
        ut, ct = dec.tokenizer.decode(u.token_ids), dec.tokenizer.decode(c.token_ids)
        ufeas = all(covered(ut, f) for f in fs)
        rec = dict(item=a + i, concepts=r["concepts"], unconstrained=ut, constrained=ct, u_score=u.score, c_score=c.score,
                   u_feasible=ufeas, c_coverage=sum(covered(ct, f) for f in fs) / len(fs),
                   search_error=bool(ufeas and c.score < u.score - 1e-4), u_s=t2 - t1, c_s=t3 - t2,
                   c_tokens=len(c.token_ids), u_tokens=len(u.token_ids), c_steps=c.steps)
        out.append(rec)
        print(f"[{a + i}] {r['concepts']}\n  U {u.score:7.2f} feas={ufeas} {ut!r}\n  C {c.score:7.2f} err={rec['search_error']} {ct!r}"
              f"  ({t2 - t1:.1f}s / {t3 - t2:.1f}s)", flush=True)
    feas = [o for o in out if o["u_feasible"]]
    summ = dict(items=len(out), u_feasible=len(feas), search_errors=sum(o["search_error"] for o in out),
                c_coverage=sum(o["c_coverage"] for o in out) / len(out), u_seconds=sum(o["u_s"] for o in out),
                c_seconds=sum(o["c_s"] for o in out), c_tokens=sum(o["c_tokens"] for o in out),
                wall=time.time() - t0)
    print(json.dumps(summ))
    if args.out:
        json.dump(dict(summary=summ, items=out), open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
