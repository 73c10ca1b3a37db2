"""``fstbeam serve`` under 1, 8 and 32 concurrent clients vs the same prompts decoded offline.

    python benchmarks/bench_serve.py                       # default model, ~10 min on 2 busy cores
    python benchmarks/bench_serve.py --max-tokens 8 --levels 1,8 --out /tmp/serve.json

The requests mix four kinds of constraints (none, CEFR A1, two must-include phrases, one AnyOf
plus a phrase) over learner questions (``--format qa --stop-at-newline``, beam 5). The server
runs in a process of its own (``python -m fstbeam.serve``); clients are httpx coroutines, each
sending its next request when the last one is answered. Offline, one process decodes the same
prompts with the same settings and constraints in one ``Decoder.stream`` call (what
``fstbeam generate --file`` runs). Reported: requests/s, output tokens/s and p50/p99 latency per
level, the throughput ratio to offline, and whether every output equals the offline one. Both
sides are warmed up first (constraints compiled, kernels compiled); times are wall-clock.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "What do you eat for breakfast?", "Where do you live?", "What is your favourite animal and why?",
    "What do you do at the weekend?", "Can you describe your family?", "What time do you get up in the morning?",
    "What is your favourite food?", "How do you go to school?", "What did you do yesterday?",
    "Do you like music?", "What is the weather like today?", "Who is your best friend?",
    "What do you drink in the morning?", "Where do you go on holiday?", "What sports do you play?",
    "What is in your bag?",
]
KINDS = {
    "none": None,
    "A1": {"cefr": "A1"},
    "2 phrases": {"phrases": ["good", "friend"]},
    "AnyOf": {"phrases": [["tea", "coffee", "milk"], "morning"]},
}


def workload():
    return [(q, kind) for i, q in enumerate(QUESTIONS) for kind in KINDS for _ in [i]]


def offline(args, items):
    """Decode ``items`` in one process, one stream call; (texts, tokens, seconds)."""
    import torch

    from fstbeam import AnyOf, Decoder, compile_constraints
    from fstbeam.runtime.defaults import generate_defaults
    from fstbeam.runtime.templates import prompt_format

    torch.set_num_threads(args.threads)
    dec = Decoder(args.model, device="cpu", prompt_format=prompt_format("qa"))
    ccs = {}
    for kind, c in KINDS.items():
        if c is None:
            ccs[kind] = None
        elif "cefr" in c:
            ccs[kind] = compile_constraints(cefr=c["cefr"], tokenizer=dec.vocab, leading_space=True)
        else:
            ccs[kind] = compile_constraints(tokenizer=dec.vocab, phrases=[AnyOf(*p) if isinstance(p, list) else p
                                                                          for p in c["phrases"]])
    opts = dict(generate_defaults(qa=True), beam_size=args.beam, max_new_tokens=args.max_tokens, stop_at="line",
                batch_size=args.batch_size)
    opts["min_new_tokens"] = min(opts.get("min_new_tokens", 0), args.max_tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dec.generate([q for q, _ in items[:4]], [ccs[k] for _, k in items[:4]], **opts)  # warm-up
        t0 = time.perf_counter()
        res = list(dec.stream([q for q, _ in items], [ccs[k] for _, k in items], ordered=True, **opts))
        secs = time.perf_counter() - t0
    return [r.text for r in res], sum(len(r.token_ids) for r in res), secs


def start_server(args) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "fstbeam.serve", "--port", "0", "--format", "qa", "--stop-at-newline", "--quiet",
           "--batch-size", str(args.batch_size), "--max-queue", "1024"]
    if args.model:
        cmd += ["--model", args.model]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stderr:
        if "fstbeam serve: ready on " in line:
            return proc, line.split("ready on ", 1)[1].strip()
    raise RuntimeError("the server did not start")


async def run_level(url, args, items, clients: int):
    import httpx

    queue = list(items)
    lat, texts, tokens = [], {}, 0

    async def client(c: httpx.AsyncClient):
        nonlocal tokens
        while queue:
            i, (q, kind) = queue.pop(0)
            body = {"prompt": q, "max_tokens": args.max_tokens, "beam_size": args.beam}
            if KINDS[kind] is not None:
                body["constraints"] = KINDS[kind]
            t0 = time.perf_counter()
            r = await c.post(url + "/v1/completions", json=body)
            lat.append(time.perf_counter() - t0)
            r.raise_for_status()
            j = r.json()
            texts[i] = j["choices"][0]["text"]
            tokens += j["usage"]["completion_tokens"]

    queue = list(enumerate(items))
    async with httpx.AsyncClient(timeout=3600, limits=httpx.Limits(max_connections=clients + 4)) as c:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(c) for _ in range(clients)))
        secs = time.perf_counter() - t0
    lat.sort()
    return {"clients": clients, "requests": len(items), "seconds": round(secs, 2), "requests_per_s": len(items) / secs,
            "tokens": tokens, "tokens_per_s": tokens / secs, "p50_s": statistics.median(lat),
            "p99_s": lat[min(len(lat) - 1, int(0.99 * len(lat)))], "texts": texts}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads of both sides (default 1: on a shared, busy 2-core machine two threads of "
                         "the main thread were 10x slower per step for small batches)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/serve.json"))
    args = ap.parse_args()
    items = workload()
    levels = [int(x) for x in args.levels.split(",")]

    t0 = time.perf_counter()
    off_texts, off_tokens, off_secs = offline(args, items)
    print(f"offline: {len(items)} prompts, {off_tokens} tokens in {off_secs:.1f} s = {off_tokens / off_secs:.2f} tokens/s "
          f"({time.perf_counter() - t0:.0f} s with loading)", flush=True)
    proc, url = start_server(args)
    rows = []
    try:
        import httpx

        for c in KINDS.values():  # warm-up: compile each kind's constraints, JIT the kernels
            body = {"prompt": QUESTIONS[0], "max_tokens": 2, "beam_size": args.beam}
            if c is not None:
                body["constraints"] = c
            httpx.post(url + "/v1/completions", json=body, timeout=600).raise_for_status()
        for clients in levels:
            n = min(len(items), max(16, 2 * clients))
            sub = items[:n]
            row = asyncio.run(run_level(url, args, sub, clients))
            texts = row.pop("texts")
            row["identical"] = all(texts[i] == off_texts[i] for i in range(n))
            row["differ"] = [i for i in range(n) if texts[i] != off_texts[i]]
            off_rate = sum(1 for _ in sub) and off_tokens / off_secs
            row["tokens_per_s_vs_offline"] = row["tokens_per_s"] / off_rate
            rows.append(row)
            print(f"{clients:>3} clients: {n} requests, {row['requests_per_s']:.2f} req/s, {row['tokens_per_s']:.2f} tokens/s "
                  f"({row['tokens_per_s_vs_offline']:.0%} of offline), p50 {row['p50_s']:.2f} s, p99 {row['p99_s']:.2f} s, "
                  f"identical outputs: {row['identical']}", flush=True)
    finally:
        proc.terminate()
        proc.wait(60)
    print("\n| clients | requests | req/s | tokens/s | vs offline | p50 s | p99 s | identical |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['requests']} | {r['requests_per_s']:.2f} | {r['tokens_per_s']:.2f} | "
              f"{r['tokens_per_s_vs_offline']:.0%} | {r['p50_s']:.2f} | {r['p99_s']:.2f} | {r['identical']} |")
    print(f"| offline | {len(items)} | {len(items) / off_secs:.2f} | {off_tokens / off_secs:.2f} | 100% | | | |")
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
           "settings": {"threads": args.threads, "max_tokens": args.max_tokens, "beam": args.beam, "batch_size": args.batch_size,
                        "kinds": list(KINDS), "format": "qa", "stop_at_newline": True},
           "offline": {"requests": len(items), "tokens": off_tokens, "seconds": round(off_secs, 2),
                       "tokens_per_s": off_tokens / off_secs},
           "levels": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
