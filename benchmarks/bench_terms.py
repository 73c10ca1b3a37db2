"""Terminology-constrained English -> German translation with the default model (Gemma 3 270M).

    python benchmarks/bench_terms.py --limit 4                 # a few sentences while developing
    python benchmarks/bench_terms.py --out benchmarks/results/terms.json

Data: ``benchmarks/data/terms_en_de.jsonl`` (48 sentences: source, reference, 1-2 terms) and the
term base ``benchmarks/data/terms_en_de.tsv`` (German noun paradigms, as in the terminology
grammar). Three modes, interleaved per batch so the shared machine's load hits them alike:

- ``unconstrained``: plain beam search;
- ``exact``: each term's base form must appear (``phrases=["Vertrag"]``);
- ``anyof``: each term in any of its forms (the ``terminology`` grammar with ``termbase`` and
  ``source``: one AnyOf per term, "Vertrag" / "Verträge" / "Vertrags" ...).

Metrics per mode: term accuracy (share of terms that appear in some allowed form), chrF against
the reference (sacrebleu), fragment rate (share of outputs with two adjacent words ``a b`` where
``a`` is a proper prefix of ``b``, case-insensitive, or with a word in neither a large German word
list (wordfreq, top 200k) nor the prompt), and seconds per sentence (wall and process CPU).
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA, TERMBASE = HERE / "data" / "terms_en_de.jsonl", HERE / "data" / "terms_en_de.tsv"
SHOTS = ("English: The weather is nice today.\nGerman: Das Wetter ist heute schön.\n\n"
         "English: We are very tired.\nGerman: Wir sind sehr müde.\n\n")
MODES = ("unconstrained", "exact", "anyof")
WORD = re.compile(r"\w+", re.UNICODE)


def load_data(limit: int | None):
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def term_forms(rows) -> list[dict[str, tuple[str, ...]]]:
    """Per sentence: source term -> allowed target forms, from the terminology grammar. Checks
    that the grammar's source filter finds exactly the sentence's declared terms."""
    from fstbeam import grammars
    from fstbeam.grammars.lib.tsv import read_tsv

    target = {r.fields[0]: r.fields[1] for r in read_tsv(TERMBASE, columns=(2, 3))}
    by_target = {}
    out = []
    g = grammars.get("terminology")
    for row in rows:
        phrases = g.build(termbase=TERMBASE, source=row["source"]).phrases
        forms = {p[0] if isinstance(p, tuple) else p: p if isinstance(p, tuple) else (p,) for p in phrases}
        by_target.update(forms)
        got = {src: forms[target[src]] for src in row["terms"] if target[src] in forms}
        if set(got) != set(row["terms"]) or len(forms) != len(row["terms"]):
            raise SystemExit(f"term base filter disagrees with the data for {row['source']!r}: {sorted(forms)}")
        out.append(got)
    return out


def has_form(text: str, forms) -> bool:
    from fstbeam.grammars.lib.phrases import occurs

    return any(occurs(text, f) for f in forms)


def fragment(text: str, known: set[str]) -> bool:
    words = WORD.findall(text)
    low = [w.lower() for w in words]
    for a, b in zip(low, low[1:]):
        if a != b and b.startswith(a):
            return True
    return any(w not in known and w.casefold() not in known and not w.isdigit() for w in low)  # wordfreq folds ß


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, help="only the first N sentences")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default=str(HERE / "results" / "terms.json"))
    ap.add_argument("--rescore", metavar="JSON", help="recompute the metrics from the outputs stored in JSON")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch

    rows = load_data(args.limit)
    forms = term_forms(rows)
    n_terms = sum(len(f) for f in forms)
    inflected = sum(not has_form(r["reference"], (f[0],)) and has_form(r["reference"], f) for r, fs in zip(rows, forms) for f in fs.values())
    missing = [r["reference"] for r, fs in zip(rows, forms) for f in fs.values() if not has_form(r["reference"], f)]
    if missing:
        raise SystemExit(f"references without an allowed term form: {missing}")
    print(f"{len(rows)} sentences, {n_terms} terms, {inflected} ({inflected / n_terms:.0%}) inflected in the reference")

    prompts = [SHOTS + f"English: {r['source']}\nGerman:" for r in rows]
    out = Path(args.out)
    if args.rescore:
        old = json.loads(Path(args.rescore).read_text(encoding="utf-8"))
        n = old["timing"]["done"]  # a checkpoint holds the first n sentences
        outs = {m: [o[m] for o in old["outputs"][:n]] for m in MODES}
        report = dict(old, results=score(rows[:n], forms[:n], prompts[:n], outs, old["timing"]))
        return write(report, out)

    import fstbeam
    from fstbeam.runtime.decoder import Decoder

    t0 = time.perf_counter()
    dec = Decoder(prompt_format="raw")
    load_s = time.perf_counter() - t0
    eos = tuple(dec.eos_ids) + dec.newline_ids()

    def constraints(mode, i):
        if mode == "unconstrained":
            return None
        if mode == "exact":
            return fstbeam.compile_constraints(tokenizer=dec.vocab, phrases=[f[0] for f in forms[i].values()])
        return fstbeam.compile_constraints(tokenizer=dec.vocab, grammar="terminology",
                                           grammar_params={"termbase": TERMBASE, "source": rows[i]["source"]})

    outs = {m: [None] * len(rows) for m in MODES}
    wall = {m: 0.0 for m in MODES}
    cpu = {m: 0.0 for m in MODES}
    satisfied = {m: 0 for m in MODES}
    for lo in range(0, len(rows), args.batch_size):
        idx = list(range(lo, min(lo + args.batch_size, len(rows))))
        for mode in MODES:
            t, c = time.perf_counter(), time.process_time()
            ccs = [constraints(mode, i) for i in idx]
            res = dec.generate([prompts[i] for i in idx], ccs if mode != "unconstrained" else None, beam_size=args.beam,
                               max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, eos_ids=eos,
                               preset="plain")
            wall[mode] += time.perf_counter() - t
            cpu[mode] += time.process_time() - c
            for i, r in zip(idx, res):
                outs[mode][i] = r.text.strip()
                satisfied[mode] += bool(r.satisfied)
        print(f"  {idx[-1] + 1}/{len(rows)} sentences done, {time.perf_counter() - t0:.0f} s", flush=True)
        report = {
            "benchmark": "bench_terms",
            "config": {"sentences": len(rows), "terms": n_terms, "inflected_in_reference": inflected, "beam": args.beam,
                       "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
                       "model": "default (Gemma 3 270M)", "load_seconds": round(load_s, 1),
                       "prompt": "two-shot 'English: ...\\nGerman: ...', stop at newline"},
            "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "torch": torch.__version__,
                        "threads": torch.get_num_threads()},
            "timing": {"wall": wall, "cpu": cpu, "satisfied": satisfied, "done": idx[-1] + 1},
            "outputs": [{"source": r["source"], "reference": r["reference"], "terms": {k: list(v) for k, v in f.items()},
                         **{m: outs[m][i] for m in MODES}} for i, (r, f) in enumerate(zip(rows, forms))],
        }
        write(report, out.with_suffix(".partial.json"), quiet=True)  # a checkpoint: --rescore it if needed
    report["results"] = score(rows, forms, prompts, outs, report["timing"])
    return write(report, out)


def score(rows, forms, prompts, outs, timing) -> dict:
    import sacrebleu
    import wordfreq

    known = set(wordfreq.top_n_list("de", 200_000))
    prompt_words = [{w.lower() for w in WORD.findall(p)} for p in prompts]
    n_terms = sum(len(f) for f in forms)
    wall, cpu, satisfied = timing["wall"], timing["cpu"], timing["satisfied"]
    refs = [r["reference"] for r in rows]
    results = {}
    for mode in MODES:
        hyp = outs[mode]
        hits = sum(has_form(h, f) for h, fs in zip(hyp, forms) for f in fs.values())
        frag = sum(fragment(h, known | pw) for h, pw in zip(hyp, prompt_words))
        results[mode] = {
            "term_accuracy": round(hits / n_terms, 4),
            "chrf": round(sacrebleu.corpus_chrf(hyp, [refs]).score, 2),
            "fragment_rate": round(frag / len(rows), 4),
            "seconds_per_sentence_wall": round(wall[mode] / len(rows), 3),
            "seconds_per_sentence_cpu": round(cpu[mode] / len(rows), 3),
            "satisfied": satisfied[mode],
        }
    print(f"\n{'mode':<15}{'term acc':>9}{'chrF':>7}{'fragments':>10}{'s/sent':>8}{'cpu s':>7}")
    for m, r in results.items():
        print(f"{m:<15}{r['term_accuracy']:>9.3f}{r['chrf']:>7.1f}{r['fragment_rate']:>10.3f}"
              f"{r['seconds_per_sentence_wall']:>8.2f}{r['seconds_per_sentence_cpu']:>7.2f}")
    return results


def write(report: dict, out: Path, quiet: bool = False) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if not quiet:
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
