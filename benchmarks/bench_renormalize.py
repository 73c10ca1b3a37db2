"""Full softmax vs renormalized scores: what ``renormalize=True`` does to the outputs.

    python benchmarks/bench_renormalize.py                 # ~10 minutes on a 2-core CPU
    python benchmarks/bench_renormalize.py --levels A1 --out benchmarks/results/renormalize.json

20 learner questions (``Question: ...\\nAnswer:``), CEFR word lists with a leading space, beam 5,
an answer ends at EOS or a newline. Per setting: the model's own log-probability of the output
(re-scored with the full softmax, ``Decoder.score``, EOS or newline included), per token, the
output length, how many outputs end by themselves (EOS/newline) rather than at the length limit,
and how often the two settings agree. The unconstrained answer's log-probability is the
reference: the closer a constrained answer gets to it, the less the constraint cost the model.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path

QUESTIONS = [
    "What do you eat for breakfast?", "Where do you live?", "What is your favourite animal and why?",
    "What do you do at the weekend?", "Can you describe your family?", "What time do you get up in the morning?",
    "What is the weather like today?", "What do you like to drink?", "How do you go to school?",
    "What is your favourite colour?", "What do you do in the evening?", "Do you have a pet?",
    "What is your best friend like?", "What sports do you like?", "What did you do yesterday?",
    "What is in your bag?", "What is your house like?", "What do you want to do in the summer?",
    "What music do you like?", "What is your favourite food?",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/results/renormalize.json")
    ap.add_argument("--levels", default="A1,B1")
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--limit", type=int, default=len(QUESTIONS), help="first N questions only")
    ap.add_argument("--stop", choices=("newline", "eos"), default="newline",
                    help="end an answer at EOS or a newline (default), or at EOS only (longer outputs)")
    args = ap.parse_args(argv)
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.runtime import Decoder

    dec = Decoder(device="cpu", prompt_format="Question: {prompt}\nAnswer:")
    qs = QUESTIONS[: args.limit]
    stop = dec.eos_ids + (dec.newline_ids() if args.stop == "newline" else ())
    kw = dict(beam_size=args.beam, max_new_tokens=args.max_new_tokens, eos_ids=stop, batch_size=8, preset="plain")  # the settings as given (the API's default preset is the format's since issue 39)

    def rescore(res):  # the model's full-softmax log-probability of what was output, end token included
        return [_model_logprob(dec, q, r, stop) for q, r in zip(qs, res)]

    def run(cc, **opts):
        t = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dec.generate(qs, cc, **kw, **opts)
        return res, time.process_time() - t

    out = {"env": {"questions": len(qs), "beam": args.beam, "max_new_tokens": args.max_new_tokens, "stop": args.stop,
                   "loadavg_start": os.getloadavg()}, "levels": {}}
    free, _ = run(None)
    free_lp = rescore(free)
    out["unconstrained"] = {"logprob": free_lp, "texts": [r.text for r in free]}
    for lvl in args.levels.split(","):
        cc = compile_constraints(cefr=lvl, tokenizer=dec.vocab, leading_space=True)
        level = {}
        for name, renorm in (("full_softmax", False), ("renormalized", True)):
            res, cpu = run(cc, renormalize=renorm)
            lp = rescore(res)
            n = [len(r.token_ids) + (r.finish_reason == "eos") for r in res]
            level[name] = {
                "cpu": cpu, "logprob": lp, "tokens": n, "texts": [r.text for r in res],
                "mean_logprob": statistics.mean(lp), "mean_logprob_per_token": statistics.mean(a / max(1, b) for a, b in zip(lp, n)),
                "mean_tokens": statistics.mean(n), "ended_by_itself": sum(r.finish_reason == "eos" for r in res),
                "satisfied": sum(r.satisfied for r in res),
                "mean_gap_to_unconstrained": statistics.mean(a - b for a, b in zip(lp, free_lp)),
            }
        f, r = level["full_softmax"], level["renormalized"]
        level["same_output"] = sum(a == b for a, b in zip(f["texts"], r["texts"]))
        level["full_softmax_higher_model_logprob"] = sum(a > b + 1e-4 for a, b in zip(f["logprob"], r["logprob"]))
        out["levels"][lvl] = level
        print(f"{lvl}: full softmax: mean model logprob {f['mean_logprob']:.2f} ({f['mean_logprob_per_token']:.2f}/token), "
              f"{f['mean_tokens']:.1f} tokens, {f['ended_by_itself']}/{len(qs)} end by themselves; renormalized: "
              f"{r['mean_logprob']:.2f} ({r['mean_logprob_per_token']:.2f}/token), {r['mean_tokens']:.1f} tokens, "
              f"{r['ended_by_itself']}/{len(qs)} end; same output {level['same_output']}/{len(qs)}, full softmax "
              f"scores higher under the model on {level['full_softmax_higher_model_logprob']}/{len(qs)}", flush=True)
    out["env"]["loadavg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")
    return 0


def _model_logprob(dec, prompt, res, stop) -> float:
    """Full-softmax log-probability of the output, plus its end token when it ended by itself (the
    search ends with the most likely allowed end token, EOS or newline, so that one)."""
    import torch

    ids = dec.encode(prompt)
    seq = ids + list(res.token_ids)
    with torch.inference_mode():
        lp = torch.log_softmax(dec.model(torch.tensor([seq])).logits[0].float(), -1)
    toks = torch.tensor(res.token_ids, dtype=torch.long)
    total = float(lp[torch.arange(len(ids) - 1, len(seq) - 1), toks].sum()) if len(toks) else 0.0
    if res.finish_reason == "eos":
        total += float(lp[-1, torch.tensor(list(stop))].max())
    return total


if __name__ == "__main__":
    raise SystemExit(main())
