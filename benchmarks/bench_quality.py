"""Output quality on the default model (Gemma 3 270M): what a reader gets, not how fast.

    python benchmarks/bench_quality.py --quick                    # a small subset, minutes
    python benchmarks/bench_quality.py --label after              # everything (long on 2 cores)
    python benchmarks/bench_quality.py --settings plain --label before --sections a,b

Sections (figures in benchmarks/results/quality.json under the run's --label, plot in
docs/quality.png):

(a) constrained continuation (Post & Vilar's validation experiment, monolingual): sentences from
    the Debian package ``fortunes`` (benchmarks/data/prose_bench.tsv, see build_prose.py) split
    into a prompt and a reference continuation; constraints drawn from the reference: 1, 2 and 4
    single words and one 3-word phrase, plus an unconstrained run. Per setting: satisfied %,
    present % (regex check), chrF and BLEU (sacrebleu), fragment %, repetition-loop %, empty %,
    mean words, model log-probability per token, seconds per input.
(b) CEFR answers: learner questions (benchmarks/data/learner_questions.txt) unconstrained, A1
    and A2: empty %, one-word %, median words, % ending in . ! ?, and the share of A1 / A2 words
    by cefrpy directly.
(c) anchor: transformers 4.x ``force_words_ids`` beam search on (a), run by
    benchmarks/anchor_tf4.py in a separate venv (--tf4-python); its outputs are measured here.

``--settings plain`` decodes as a user did before this benchmark existed (beam 5, no length
reward); ``--settings defaults`` uses the decoding defaults of ``fstbeam generate``
(``fstbeam.runtime.defaults``). Questions use ``Question: ...\\nAnswer:`` and stop at a newline;
continuations stop at a newline too.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import quality_metrics as qm  # noqa: E402

DATA = Path(__file__).parent / "data"
STOP = {"the", "and", "but", "for", "not", "you", "your", "are", "was", "were", "that", "this", "with", "his", "her", "its",
        "they", "them", "their", "have", "has", "had", "who", "what", "when", "from", "all", "any", "can", "will", "would",
        "there", "than", "then", "into", "out", "one", "our", "she", "him", "it's", "don't", "does", "did", "been", "being"}
QA = "Question: {prompt}\nAnswer:"


def read_lines(path: Path) -> list[str]:
    return [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]


def continuation_items(limit: int | None, name: str = "prose_bench.tsv") -> list[dict]:
    items = []
    for i, line in enumerate(read_lines(DATA / name)[:limit]):
        src, sent = line.split("\t")
        ws = sent.split()
        cut = max(4, round(0.4 * len(ws)))
        prompt, ref = " ".join(ws[:cut]), " " + " ".join(ws[cut:])
        pw = {w.lower() for w in qm.words(prompt)}
        cands = []
        for w in qm.words(ref):
            if len(w) >= 3 and w.lower() not in STOP and w.lower() not in pw and w not in cands and "'" not in w:
                cands.append(w)
        rng = random.Random(i)
        picks = {k: sorted(rng.sample(range(len(cands)), k)) for k in (1, 2, 4) if len(cands) >= k}
        toks = ref.split()
        phrase = None
        for j in range(len(toks) - 2):  # first 3 plain words (no punctuation) with a content word
            tri = toks[j : j + 3]
            if all(re.fullmatch(r"[A-Za-z]+", t) for t in tri) and any(t.lower() not in STOP and len(t) >= 3 for t in tri):
                phrase = " ".join(tri)
                break
        cons = {f"{k}w": [cands[x] for x in p] for k, p in picks.items()}
        if phrase:
            cons["phrase3"] = [phrase]
        items.append({"source": src, "prompt": prompt, "reference": ref, "constraints": cons})
    return items


def decode_rows(dec, prompts, ccs, opts, constraints, references=None):
    """Decode ``prompts`` in batches of 8 (the library default); seconds per input = wall time
    of the whole call / inputs. Rows for summarize."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dec.generate(prompts, ccs, **{"preset": "plain", **opts})  # the settings as given (the API's default preset is the format's since issue 39)
    per = (time.perf_counter() - t0) / max(1, len(prompts))
    rows = []
    for i, (p, r) in enumerate(zip(prompts, res)):
        n = len(r.token_ids) + (1 if r.finish_reason == "eos" else 0)
        rows.append({"text": r.text, "prompt": p, "constraints": constraints[i] if constraints else [],
                     "satisfied": r.satisfied, "logprob": r.logprob, "n_tokens": n, "seconds": per,
                     "reference": None if references is None else references[i], "ids": list(r.token_ids)})
    return rows


def options(settings: str, dec, *, qa: bool, max_new_tokens: int) -> dict:
    stop = tuple(dec.eos_ids) + dec.newline_ids()
    base = dict(beam_size=5, max_new_tokens=max_new_tokens, eos_ids=stop)
    if settings == "plain":
        return base
    from fstbeam.runtime.defaults import generate_defaults

    return {**base, **generate_defaults(qa=qa)}


def control_strings(dec) -> tuple[str, ...]:
    tok = dec.tokenizer
    added = getattr(tok, "added_tokens_decoder", {}) or {}
    return tuple(a.content for a in added.values() if re.fullmatch(r"<[^<>\s]+>|\[[^\[\]\s]+\]", a.content))


A_SETTINGS = ("none", "1w", "2w", "4w", "phrase3")


def section_a(dec, items, settings, vocab, ctrl, M, which=A_SETTINGS):
    from fstbeam import compile_constraints

    out, kept = {}, {}
    for name in which:
        use = [it for it in items if name == "none" or name in it["constraints"]]
        cons = [[] if name == "none" else it["constraints"][name] for it in use]
        ccs = [None if not c else compile_constraints(phrases=c, tokenizer=dec.vocab) for c in cons]
        rows = decode_rows(dec, [it["prompt"] for it in use], ccs, options(settings, dec, qa=False, max_new_tokens=M),
                           cons, [it["reference"] for it in use])
        out[name] = qm.summarize(rows, vocab, ctrl)
        kept[name] = [r["text"] for r in rows]
        print(f"(a) {name:8s} " + " ".join(f"{k}={v}" for k, v in out[name].items() if k != "fragment_examples"), flush=True)
    return out, kept


def section_b(dec, questions, settings, vocab, ctrl, levels, M):
    from fstbeam import compile_constraints

    out, kept = {}, {}
    qdec_fmt = dec.prompt_format
    dec.prompt_format = QA
    try:
        for name in ("unconstrained", "A1", "A2"):
            cc = None if name == "unconstrained" else compile_constraints(cefr=name, tokenizer=dec.vocab, leading_space=True)
            rows = decode_rows(dec, questions, cc, options(settings, dec, qa=True, max_new_tokens=M), None)
            for r in rows:
                r["prompt"] = QA.format(prompt=r["prompt"])
            s = qm.summarize(rows, vocab, ctrl)
            s["A1_word_pct"] = qm.cefr_share([r["text"] for r in rows], levels, 1)
            s["A2_word_pct"] = qm.cefr_share([r["text"] for r in rows], levels, 2)
            out[name], kept[name] = s, [r["text"] for r in rows]
            print(f"(b) {name:13s} " + " ".join(f"{k}={v}" for k, v in s.items() if k not in ("fragment_examples", "chrF", "BLEU")), flush=True)
    finally:
        dec.prompt_format = qdec_fmt
    return out, kept


def section_c(dec, items, tf4_python, vocab, ctrl, M):
    """transformers 4.x force_words_ids on (a), in its own venv; measured here."""
    from fstbeam.files.default_model import default_model_dir

    jobs = []
    for name in ("1w", "2w", "4w", "phrase3"):
        for i, it in enumerate(items):
            if name in it["constraints"]:
                jobs.append({"setting": name, "i": i, "prompt": it["prompt"], "constraints": it["constraints"][name]})
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"model": str(default_model_dir()), "max_new_tokens": M, "jobs": jobs}))
        proc = subprocess.run([tf4_python, str(Path(__file__).parent / "anchor_tf4.py"), str(src), str(dst)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:]}, {}
        res = json.loads(dst.read_text())
    out, kept = {"transformers": res["version"], "method": res["method"]}, {}
    for name in ("1w", "2w", "4w", "phrase3"):
        rows = []
        for job, r in zip(jobs, res["outputs"]):
            if job["setting"] != name:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lp = dec.score(job["prompt"], r["ids"], eos=r["ended"])
            rows.append({"text": r["text"], "prompt": job["prompt"], "constraints": job["constraints"], "satisfied": True,
                         "logprob": lp, "n_tokens": len(r["ids"]) + int(r["ended"]), "seconds": r["seconds"],
                         "reference": items[job["i"]]["reference"]})
        s = qm.summarize(rows, vocab, ctrl)
        s["satisfied_pct"] = s["present_pct"]  # HF reports no satisfaction; the regex check stands in
        out[name], kept[name] = s, [r["text"] for r in rows]
        print(f"(c) {name:8s} " + " ".join(f"{k}={v}" for k, v in s.items() if k != "fragment_examples"), flush=True)
    return out, kept


def section_hf(dec, items, vocab, ctrl, M):
    """The unconstrained peer in this venv: Hugging Face ``model.generate(num_beams=5)`` with its
    own defaults (length_penalty 1.0), stopping at EOS or a newline like fstbeam, on (a)'s prompts."""
    import torch

    tok, model = dec.tokenizer, dec.model
    stop = sorted(set(dec.eos_ids) | set(dec.newline_ids()))
    rows = []
    for it in items:
        enc = tok(it["prompt"], return_tensors="pt")
        t0 = time.perf_counter()
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = model.generate(**enc, num_beams=5, max_new_tokens=M, do_sample=False, eos_token_id=stop, pad_token_id=0)
        ids, ended = [], False
        for x in out[0, enc["input_ids"].shape[1]:].tolist():
            if x in stop:
                ended = True
                break
            ids.append(x)
        sec = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lp = dec.score(it["prompt"], ids, eos=ended)
        rows.append({"text": tok.decode(ids, skip_special_tokens=False), "prompt": it["prompt"], "constraints": [], "satisfied": True,
                     "logprob": lp, "n_tokens": len(ids) + int(ended), "seconds": sec, "reference": it["reference"]})
    s = qm.summarize(rows, vocab, ctrl)
    print("(hf) none     " + " ".join(f"{k}={v}" for k, v in s.items() if k != "fragment_examples"), flush=True)
    return {"none": s, "method": "model.generate(num_beams=5), transformers " + __import__("transformers").__version__}, \
        {"none": [r["text"] for r in rows]}


def tune(dec, limit, vocab, ctrl, M, rewards):
    """Huang et al. tune r on a dev set (data/*_dev.*, never benchmark items), one run per r:
    - continuations (dev sentences, none and 2 words): the r with the best dev chrF among those
      with loops in at most 2% of outputs;
    - answers (dev questions, no reference to score against): the smallest r whose answers are
      never empty or one word, have a median of at least 10 words (a sentence) and loop in at
      most 2% (at a median of 7.5, a held-out question still got the one-word " Eggs.")."""
    from fstbeam import compile_constraints
    from fstbeam.runtime import defaults

    items = [it for it in continuation_items(None, "prose_dev.tsv")[:limit] if "2w" in it["constraints"]]
    questions = read_lines(DATA / "learner_questions_dev.txt")[:limit]
    base = dict(beam_size=5, max_new_tokens=M, eos_ids=tuple(dec.eos_ids) + dec.newline_ids())
    table = {}
    for r in rewards:
        rows = []
        for name in ("none", "2w"):
            cons = [[] if name == "none" else it["constraints"][name] for it in items]
            ccs = [None if not c else compile_constraints(phrases=c, tokenizer=dec.vocab) for c in cons]
            opts = {**base, **defaults.generate_defaults(), "length_reward": r}
            rows += decode_rows(dec, [it["prompt"] for it in items], ccs, opts, cons, [it["reference"] for it in items])
        cont = qm.summarize(rows, vocab, ctrl)
        fmt, dec.prompt_format = dec.prompt_format, QA
        try:
            qopts = {**base, **defaults.generate_defaults(qa=True), "length_reward": r, "max_new_tokens": 40}
            qrows = decode_rows(dec, questions, None, qopts, None)
        finally:
            dec.prompt_format = fmt
        qa = qm.summarize(qrows, vocab, ctrl)
        table[r] = {"dev_chrF": cont["chrF"], "dev_loop_pct": cont["loop_pct"], "dev_fragment_pct": cont["fragment_pct"],
                    "dev_mean_words": cont["mean_words"], "dev_sentence_end_pct": cont["sentence_end_pct"],
                    "dev_logprob_per_token": cont["logprob_per_token"], "qa_empty_pct": qa["empty_pct"],
                    "qa_one_word_pct": qa["one_word_pct"], "qa_median_words": qa["median_words"], "qa_loop_pct": qa["loop_pct"],
                    "qa_sentence_end_pct": qa["sentence_end_pct"], "qa_logprob_per_token": qa["logprob_per_token"]}
        print(f"tune r={r}: {table[r]}", flush=True)
    ok = [r for r, v in table.items() if v["dev_loop_pct"] <= 2] or list(table)
    best = max(ok, key=lambda r: table[r]["dev_chrF"])
    full = [r for r, v in table.items() if v["qa_empty_pct"] == 0 and v["qa_one_word_pct"] == 0 and v["qa_median_words"] >= 10
            and v["qa_loop_pct"] <= 2]
    return {"rewards": {str(r): v for r, v in table.items()}, "chosen": best, "chosen_qa": min(full) if full else None,
            "dev_items": len(items), "dev_questions": len(questions)}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result.get("runs", {})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    settings = ["none", "1w", "2w", "4w", "phrase3"]
    width = 0.8 / max(1, len(runs) + 1)
    series = [(label, run["a"]) for label, run in runs.items() if run.get("a")]
    anchor = next((run.get("c") for run in runs.values() if isinstance(run.get("c"), dict) and "1w" in run.get("c")), None)
    if anchor:
        series.append(("transformers 4.x force_words_ids", anchor))
    for metric, ax, title in (("fragment_pct", axes[0], "(a) outputs with a fragment, %"), ("chrF", axes[1], "(a) chrF vs reference")):
        for j, (label, a) in enumerate(series):
            ax.bar([x + j * width for x in range(len(settings))], [a.get(s, {}).get(metric, math.nan) for s in settings], width, label=label)
        ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(settings))], settings)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    qa = ["unconstrained", "A1", "A2"]
    for j, (label, run) in enumerate((lb, r) for lb, r in runs.items() if r.get("b")):
        b = run["b"]
        axes[2].bar([x + j * width for x in range(3)], [b.get(s, {}).get("median_words", math.nan) for s in qa], width, label=f"{label}: median words")
        axes[2].plot([x + j * width for x in range(3)], [b.get(s, {}).get("empty_pct", math.nan) for s in qa], "x", ms=10, label=f"{label}: empty %")
    axes[2].set_xticks([x + width * (len(runs) - 1) / 2 for x in range(3)], qa)
    axes[2].set_title("(b) learner answers")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="12 sentences and 10 questions")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N sentences and questions")
    ap.add_argument("--sections", default="a,b,hf,c", help="a, b, hf (model.generate unconstrained), c (transformers 4.x anchor)")
    ap.add_argument("--settings", choices=("plain", "defaults"), default="defaults")
    ap.add_argument("--label", default=None, help="name of this run in the JSON (default: the settings)")
    ap.add_argument("--out", default="benchmarks/results/quality.json")
    ap.add_argument("--plot", default="docs/quality.png")
    ap.add_argument("--wordlist", default=None, help="English word list (default: wamerican-large)")
    ap.add_argument("--tf4-python", default="/work/venv-tf4/bin/python", help="python of a venv with transformers 4.x")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--a-settings", default=",".join(A_SETTINGS), help="which settings of (a) to run")
    ap.add_argument("--anchor-limit", type=int, default=None, help="hf and (c) on the first N items of (a) only (they are slow)")
    ap.add_argument("--tune", default=None, metavar="R,R,...", help="only tune the length reward r on the dev sets")
    args = ap.parse_args(argv)
    limit = args.limit or (12 if args.quick else None)
    sections = set(args.sections.split(","))
    from fstbeam.runtime import Decoder

    vocab = qm.english_words(args.wordlist)
    dec = Decoder(device="cpu")
    ctrl = control_strings(dec)
    if args.tune:
        out = Path(args.out)
        result = json.loads(out.read_text()) if out.exists() else {}
        result["tuning"] = tune(dec, limit, vocab, ctrl, args.max_new_tokens, [float(x) for x in args.tune.split(",")])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
        print(f"chosen r = {result['tuning']['chosen']} (continuations), {result['tuning']['chosen_qa']} (answers)")
        return 0
    items = continuation_items(limit)
    questions = read_lines(DATA / "learner_questions.txt")[:limit and max(10, limit)]
    run: dict = {"settings": args.settings, "items_a": len(items), "questions_b": len(questions), "max_new_tokens": args.max_new_tokens}
    texts: dict = {}
    if "a" in sections:
        run["a"], texts["a"] = section_a(dec, items, args.settings, vocab, ctrl, args.max_new_tokens, args.a_settings.split(","))
    if "b" in sections:
        run["b"], texts["b"] = section_b(dec, questions, args.settings, vocab, ctrl, qm.cefr_levels(), 40)
    if "hf" in sections:
        run["hf"], texts["hf"] = section_hf(dec, items[: args.anchor_limit], vocab, ctrl, args.max_new_tokens)
        run["hf"]["items"] = len(items[: args.anchor_limit])
    if "c" in sections:
        if Path(args.tf4_python).exists():
            run["c"], texts["c"] = section_c(dec, items[: args.anchor_limit], args.tf4_python, vocab, ctrl, args.max_new_tokens)
            run["c"]["items"] = len(items[: args.anchor_limit])
        else:
            run["c"] = {"error": f"{args.tf4_python} not found: make a venv with transformers 4.x (see anchor_tf4.py)"}
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    label = args.label or args.settings + ("_quick" if limit else "")
    result.setdefault("runs", {})[label] = run
    result.setdefault("texts", {})[label] = texts
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    plot(result, Path(args.plot))
    print(f"wrote {out} and {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
