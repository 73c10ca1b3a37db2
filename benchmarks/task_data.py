"""Items, few-shot prompts and constraints of bench_tasks (public data read from shared/data).

Every file is split the same way, so that nothing reported is ever tuned on or shown as an
example: rows ``[0, 200)`` are reported (``--limit N`` takes the first N), rows ``[200, 240)``
(WMT) / ``[200, 290)`` (CommonGen) are the dev split for tuning, and the 3 few-shot examples
come from the rows after that. The WMT data is CC BY-NC: it is read from the shared folder and
never copied into the repository (results keep model outputs and figures only).
"""
from __future__ import annotations

import json
from pathlib import Path

REPORT_END = 200
DEV_END = {"commongen": 290, "wmt_ende": 240, "wmt_enes": 240}
FILES = {"commongen": "commongen_test300.jsonl", "wmt_ende": "wmt25_term1_ende_dev.jsonl",
         "wmt_enes": "wmt25_term1_enes_dev.jsonl"}
TARGET = {"wmt_ende": ("de", "German"), "wmt_enes": ("es", "Spanish")}
TASKS = tuple(FILES)


def default_data_dir(repo: Path) -> Path:
    for p in (Path("/work/shared/data"), repo.parent / "shared" / "data", repo / "shared" / "data"):
        if (p / FILES["commongen"]).exists():
            return p
    return repo.parent / "shared" / "data"


def rows(data: Path, task: str) -> list[dict]:
    path = data / FILES[task]
    if not path.exists():
        raise SystemExit(f"{path} not found: pass --data with the folder of shared/data (see its README)")
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _short_examples(pool: list[dict], ok) -> list[dict]:
    picked = [r for r in pool if ok(r)][:3]
    if len(picked) < 3:
        raise SystemExit("not enough few-shot examples in the example rows")
    return picked


def commongen_prompt(examples: list[dict], concepts: list[str]) -> str:
    shots = []
    for ex in examples:
        ref = min(ex["references"], key=lambda s: abs(len(s.split()) - 10))
        shots.append(f"Words: {', '.join(ex['concepts'])}\nSentence: {ref.strip()}")
    return "\n\n".join(shots + [f"Words: {', '.join(concepts)}\nSentence:"])


def wmt_prompt(examples: list[dict], lang: tuple[str, str], source: str) -> str:
    code, name = lang
    shots = [f"English: {ex['en'].strip()}\n{name}: {ex[code].strip()}" for ex in examples]
    return "\n\n".join(shots + [f"English: {source.strip()}\n{name}:"])


def wmt_terms(row: dict) -> list[str]:
    """The required target terms: the union of the ``proper`` and ``random`` dictionaries'
    values, each once."""
    out = []
    for d in (row.get("proper") or {}, row.get("random") or {}):
        for t in d.values():
            t = t.strip()
            if t and t not in out:
                out.append(t)
    return out


def items(data: Path, task: str, split: str = "report", limit: int | None = None) -> list[dict]:
    """``[{"prompt", "constraints": [[alternatives...], ...], "references", "source"?, "sentence_case"}]``."""
    all_rows = rows(data, task)
    lo, hi = (0, REPORT_END) if split == "report" else (REPORT_END, DEV_END[task])
    chosen = all_rows[lo:hi][:limit]
    pool = all_rows[DEV_END[task]:]
    out = []
    if task == "commongen":
        from task_metrics import inflections

        exs = _short_examples(pool, lambda r: any(6 <= len(s.split()) <= 14 for s in r["references"]))
        for r in chosen:
            forms = [[c] + sorted(f for f in inflections(c) if f != c) for c in r["concepts"]]
            out.append({"prompt": commongen_prompt(exs, r["concepts"]), "constraints": forms, "concepts": r["concepts"],
                        "references": [s.strip() for s in r["references"]], "sentence_case": True})
        return out
    lang = TARGET[task]
    exs = _short_examples(pool, lambda r: 5 <= len(r["en"].split()) <= 22 and wmt_terms(r) and r["en"] != r[lang[0]])
    for r in chosen:
        out.append({"prompt": wmt_prompt(exs, lang, r["en"]), "constraints": [[t] for t in wmt_terms(r)],
                    "references": [r[lang[0]].strip()], "source": r["en"].strip(), "sentence_case": False})
    return out
