"""Constrained decoding on public tasks no one here wrote (issue 21): does the text around the
constraints read like the task's answer?

    python benchmarks/bench_tasks.py --limit 16                      # a dev look, minutes
    python benchmarks/bench_tasks.py --limit 100 --tasks commongen   # a reported run (slow on 2 cores)
    python benchmarks/bench_tasks.py --split dev --settings none,fstbeam --length-ratio 1.5,2

Tasks (data from shared/data, see its README and task_data.py for the splits): CommonGen
(concepts -> one everyday sentence; constraints: each concept as ``AnyOf`` of its inflected
forms, lemminflect, sentence case allowed) and WMT25 terminology track 1 en-de / en-es (the
union of the ``proper`` and ``random`` target terms, exact). 3-example few-shot prompts
("Words: ...\\nSentence:", "English: ...\\nGerman:"), beam 5, ``stop_at="line"`` and the
documented defaults (``generate_defaults()``), as a new user would.

Settings: ``none`` (unconstrained), ``fstbeam`` (constrained), ``tf4`` (transformers 4.x
``force_words_ids`` beam search, disjunctive, on the same model and items: anchor_tasks_tf4.py
in --tf4-python's venv). Every measure comes from the text (task_metrics.py), not from the
decoder's flags; the search-error rate compares the decoder's own scores of the constrained
and the unconstrained output where the unconstrained one already meets every constraint.
Figures go to --out (JSON, merged per task and setting so settings can run separately) and
docs/tasks.png.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import task_data  # noqa: E402
import task_metrics as tm  # noqa: E402

REPO = HERE.parent
M_DEFAULT = {"commongen": 32, "wmt_ende": 64, "wmt_enes": 64}


def first_line(text: str) -> str:
    return text.split("\n")[0]


def decode(dec, items, setting, beam, M, extra):
    """Rows of one setting: text, token count, the decoder's score; seconds = wall / items."""
    from fstbeam import AnyOf, compile_constraints
    from fstbeam.runtime.defaults import generate_defaults

    opts = {**generate_defaults(), "beam_size": beam, "max_new_tokens": M, "stop_at": "line", **extra}
    ccs = None
    t0 = time.perf_counter()
    if setting == "fstbeam":
        ccs = [compile_constraints(phrases=[AnyOf(*alts, sentence_case=it["sentence_case"]) for alts in it["constraints"]],
                                   tokenizer=dec) if it["constraints"] else None for it in items]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dec.generate([it["prompt"] for it in items], ccs, **opts)
    per = (time.perf_counter() - t0) / max(1, len(items))
    return [{"text": first_line(r.text), "n_tokens": len(r.token_ids), "score": r.score, "logprob": r.logprob,
             "seconds": per} for r in res]


def decode_tf4(items, beam, M, python):
    from fstbeam.files.default_model import default_model_dir

    jobs = [{"prompt": it["prompt"], "constraints": it["constraints"], "sentence_case": it["sentence_case"]} for it in items]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"model": str(default_model_dir()), "max_new_tokens": M, "beam": beam, "jobs": jobs}))
        proc = subprocess.run([python, str(HERE / "anchor_tasks_tf4.py"), str(src), str(dst)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the transformers 4.x peer failed:\n{proc.stderr[-3000:]}")
        res = json.loads(dst.read_text())
    rows = [{"text": first_line(o["text"]), "n_tokens": len(o["ids"]), "score": None, "logprob": None,
             "seconds": o["seconds"]} for o in res["outputs"]]
    return rows, res["version"]


def summarize(task, items, rows, M):
    import sacrebleu

    hyps = [r["text"].strip() for r in rows]
    n = max(1, len(rows))
    nref = max(len(it["references"]) for it in items)
    refs = [[it["references"][k] if k < len(it["references"]) else None for it in items] for k in range(nref)]
    s = {"items": len(rows),
         "BLEU": round(sacrebleu.corpus_bleu(hyps, refs).score, 2),
         "chrF": round(sacrebleu.corpus_chrf(hyps, refs).score, 2),
         "words_out": round(statistics.mean(len(tm.words(h)) for h in hyps), 2),
         "words_ref": round(statistics.mean(statistics.mean(len(tm.words(x)) for x in it["references"]) for it in items), 2),
         "multi_sentence_pct": round(100 * sum(len(tm.sentences(h)) > 1 for h in hyps) / n, 1),
         "cut_pct": round(100 * sum(r["n_tokens"] >= M for r in rows) / n, 1),
         # a translation ends mid-sentence only where its source ends a sentence ("Upload Field Fuel" does not)
         "mid_sentence_pct": round(100 * sum(bool(h) and not tm.ends_sentence(h) and ("source" not in it or tm.ends_sentence(it["source"]))
                                             for h, it in zip(hyps, items)) / n, 1),
         "empty_pct": round(100 * sum(not h for h in hyps) / n, 1),
         "seconds_per_item": round(statistics.mean(r["seconds"] for r in rows), 3)}
    s["words_ratio"] = round(s["words_out"] / s["words_ref"], 2)
    if task == "commongen":
        cov = [[tm.covered(h, c) for c in it["concepts"]] for h, it in zip(hyps, items)]
        s["coverage_pct"] = round(100 * sum(map(sum, cov)) / max(1, sum(map(len, cov))), 1)
        s["all_covered_pct"] = round(100 * sum(all(c) for c in cov) / n, 1)
        return s
    terms = [(h, it, alts[0]) for h, it in zip(hyps, items) for alts in it["constraints"]]
    t = max(1, len(terms))
    s["terms"] = len(terms)
    s["term_exact_pct"] = round(100 * sum(tm.term_present(h, x) for h, _, x in terms) / t, 1)
    s["term_ci_pct"] = round(100 * sum(tm.term_present(h, x, False) for h, _, x in terms) / t, 1)
    s["term_inside_pct"] = round(100 * sum(tm.term_inside(h, it["source"], x) for h, it, x in terms) / t, 1)
    return s


def search_errors(items, none_rows, con_rows):
    """Items whose unconstrained output meets every constraint (by the text check) while the
    constrained output scores lower under the same objective (the decoder's scores)."""
    feas, errs, gaps = 0, 0, []
    for it, u, c in zip(items, none_rows, con_rows):
        if not it["constraints"] or u["score"] is None or c["score"] is None:
            continue
        if all(tm.meets_any(u["text"], alts, sentence_case=it["sentence_case"]) for alts in it["constraints"]):
            feas += 1
            if c["score"] < u["score"] - 1e-3:
                errs += 1
                gaps.append(u["score"] - c["score"])
    return {"feasible": feas, "errors": errs, "error_pct_of_items": round(100 * errs / max(1, len(items)), 1),
            "error_pct_of_feasible": round(100 * errs / max(1, feas), 1),
            "mean_gap": round(statistics.mean(gaps), 2) if gaps else 0.0, "max_gap": round(max(gaps), 2) if gaps else 0.0}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("commongen", ["BLEU", "coverage_pct", "multi_sentence_pct", "cut_pct"]),
              ("wmt_ende", ["chrF", "term_exact_pct", "term_inside_pct", "cut_pct"]),
              ("wmt_enes", ["chrF", "term_exact_pct", "term_inside_pct", "cut_pct"])]
    panels = [(t, ks) for t, ks in panels if t in result["tasks"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (task, keys) in zip(axes[0], panels):
        figs = {**result["tasks"][task]["settings"], **result["tasks"][task].get("common", {})}  # like for like
        sets = [s for s in ("none", "fstbeam", "tf4") if s in figs]
        w = 0.8 / max(1, len(sets))
        for j, s in enumerate(sets):
            vals = [figs[s].get(k, 0) for k in keys]
            ax.bar([i + j * w for i in range(len(keys))], vals, w, label=s)
        ax.set_xticks([i + w * (len(sets) - 1) / 2 for i in range(len(keys))], keys, rotation=20, fontsize=8)
        n = min(figs[s]["items"] for s in sets if s != "tf4")
        ax.set_title(f"{task} ({n} items)")
        ax.legend(fontsize=8)
    fig.suptitle("bench_tasks: Gemma 3 270M, beam 5, few-shot prompts (higher is better for the first two bars)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def print_table(result: dict) -> None:
    for task, t in result["tasks"].items():
        print(f"\n== {task} ({t['split']} split) ==")
        keys = sorted({k for s in t["settings"].values() for k in s})
        sets = list(t["settings"])
        w = {s: max(12, len(s) + 2) for s in sets}
        print(f"{'measure':22s}" + "".join(f"{s:>{w[s]}s}" for s in sets))
        for k in keys:
            print(f"{k:22s}" + "".join(f"{str(t['settings'][s].get(k, '')):>{w[s]}s}" for s in sets))
        for s, c in t.get("common", {}).items():
            print(f"  on the first {c['items']} items (common to none/fstbeam): {s}: " + json.dumps(c))
        if "search_errors" in t:
            print("search errors:", t["search_errors"])


def save(out: Path, result: dict, task: str, entry: dict) -> None:
    result["tasks"][task] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))


def finalize(task, entry, items, M, samples=12) -> None:
    """Figures across settings: on the items common to all (when their counts differ), search
    errors, sample outputs."""
    common = min((len(r) for s, r in entry["rows"].items() if s != "tf4"), default=0)
    entry.pop("common", None)
    if any(len(r) != common for s, r in entry["rows"].items() if s != "tf4"):
        entry["common"] = {s: summarize(task, items[:common], r[:common], M) for s, r in entry["rows"].items() if s != "tf4"}
    n_peer = len(entry["rows"].get("tf4", []))
    for s in ("none", "fstbeam"):  # like for like with the peer, on its items
        entry["settings"].pop(f"{s}@tf4items", None)
        if 0 < n_peer < len(entry["rows"].get(s, [])):
            entry["settings"][f"{s}@tf4items"] = summarize(task, items[:n_peer], entry["rows"][s][:n_peer], M)
    if "none" in entry["rows"] and "fstbeam" in entry["rows"]:
        entry["search_errors"] = search_errors(items, entry["rows"]["none"], entry["rows"]["fstbeam"])
    entry["samples"] = {s: [r["text"] for r in rs[:samples]] for s, rs in entry["rows"].items()}


def merge(files, out: Path, plot_path, data: Path) -> int:
    """One result from runs in parallel: each task's settings from every file (a later file's
    setting wins), with the cross-setting figures computed again."""
    result = {"tasks": {}}
    for f in files:
        for task, e in json.loads(Path(f).read_text())["tasks"].items():
            keep = ("rows", "settings", "samples", "common", "search_errors")
            cur = result["tasks"].setdefault(task, {**{k: v for k, v in e.items() if k not in keep}, "rows": {}, "settings": {}})
            cur.update({k: v for k, v in e.items() if k.endswith("_version")})
            for s, rows in e["rows"].items():
                cur["rows"][s], cur["settings"][s] = rows, e["settings"][s]
    for task, e in result["tasks"].items():
        n = max(len(r) for r in e["rows"].values())
        e["items"] = n
        items = task_data.items(data, task, e["split"], n)
        for s, rows in e["rows"].items():  # the text checks of this version, on every setting
            e["settings"][s] = summarize(task, items[: len(rows)], rows, e["max_new_tokens"])
        finalize(task, e, items, e["max_new_tokens"])
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print_table(result)
    if plot_path:
        plot(result, Path(plot_path))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default=None, help="folder of the shared data (default /work/shared/data or ../shared/data)")
    ap.add_argument("--tasks", default="commongen,wmt_ende,wmt_enes")
    ap.add_argument("--settings", default="none,fstbeam,tf4")
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--split", choices=("report", "dev"), default="report")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: CommonGen 32, WMT 64")
    ap.add_argument("--length-ratio", type=float, default=None, help="override the default length_ratio")
    ap.add_argument("--length-reward", type=float, default=None, help="override the default length_reward")
    ap.add_argument("--tf4-python", default="/work/venv-tf4/bin/python")
    ap.add_argument("--peer-limit", type=int, default=None, help="run tf4 on the first N items only (it is slow)")
    ap.add_argument("--out", default=str(HERE / "results" / "tasks.json"))
    ap.add_argument("--plot", default=str(REPO / "docs" / "tasks.png"))
    ap.add_argument("--samples", type=int, default=12, help="outputs kept per setting in the JSON")
    ap.add_argument("--chunk", type=int, default=8, help="items per generate call; results are saved after each")
    ap.add_argument("--fresh", action="store_true", help="decode every item again (default: resume saved rows)")
    ap.add_argument("--merge", default=None, help="comma-separated result files (runs in parallel) to merge into --out")
    args = ap.parse_args(argv)
    data = Path(args.data) if args.data else task_data.default_data_dir(REPO)
    if args.merge:
        return merge(args.merge.split(","), Path(args.out), args.plot, data)
    extra = {k: v for k, v in (("length_ratio", args.length_ratio), ("length_reward", args.length_reward)) if v is not None}
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    result.setdefault("tasks", {})
    dec = None
    for task in args.tasks.split(","):
        items = task_data.items(data, task, args.split, args.limit)
        M = args.max_new_tokens or M_DEFAULT[task]
        prev = result["tasks"].get(task, {})
        same = prev.get("split") == args.split and prev.get("beam") == args.beam \
            and prev.get("max_new_tokens") == M and prev.get("options") == extra
        entry = prev if same else {"settings": {}, "rows": {}}
        entry.update(items=len(items), split=args.split, beam=args.beam, max_new_tokens=M, options=extra)
        for setting in args.settings.split(","):
            if setting == "tf4":
                use = items[: args.peer_limit]
                rows, entry["tf4_version"] = decode_tf4(use, args.beam, M, args.tf4_python)
                entry["rows"][setting] = rows
                entry["settings"][setting] = summarize(task, use, rows, M)
                for s in ("none", "fstbeam"):  # the same items, for a like-for-like look
                    if len(use) < len(items) and s in entry["rows"]:
                        entry["settings"][f"{s}@tf4items"] = summarize(task, use, entry["rows"][s][: len(use)], M)
                print(task, setting, json.dumps(entry["settings"][setting]), flush=True)
                continue
            else:
                if dec is None:
                    from fstbeam import Decoder

                    dec = Decoder(device="cpu")
                rows = entry["rows"].get(setting, [])[: len(items)] if not args.fresh else []
                for k in range(len(rows), len(items), args.chunk):  # saved per chunk: a stopped run resumes
                    rows = rows + decode(dec, items[k : k + args.chunk], setting, args.beam, M, extra)
                    entry["rows"][setting] = rows
                    entry["settings"][setting] = summarize(task, items[: len(rows)], rows, M)
                    save(out, result, task, entry)
                    print(f"{task} {setting} {len(rows)}/{len(items)}", flush=True)
            entry["rows"][setting] = rows
            entry["settings"][setting] = summarize(task, items[: len(rows)], rows, M)
            print(task, setting, json.dumps(entry["settings"][setting]), flush=True)
        finalize(task, entry, items, M, args.samples)
        save(out, result, task, entry)
    print_table(result)
    if args.plot:
        plot(result, Path(args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
