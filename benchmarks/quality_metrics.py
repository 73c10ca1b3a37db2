"""What a reader sees in an output, measured independently of the decoder (for bench_quality).

Words are runs of letters (with inner apostrophes and hyphens), compared case-insensitively.

- **fragment**: two adjacent words ``a b`` where ``a`` is a proper prefix of ``b`` ("aroun around"),
  or a word that is neither in the English word list nor in the prompt nor among the required
  words (a required word the list lacks, "directeth", is what the user asked for, not a break);
- **repetition loop**: a sentence that occurs twice, or a word 4-gram that occurs twice;
- **present**: every constraint occurs in the text as whole words (case-sensitive, the
  decoder's default semantics), checked with a regular expression, not with the decoder;
- **control**: the text contains the content of a control/special token (``<start_of_image>``).
"""
from __future__ import annotations

import re
import statistics
from functools import lru_cache
from pathlib import Path

WORD = re.compile(r"[A-Za-z]+(?:['\u2019-][A-Za-z]+)*")
SENT_END = re.compile(r"[.!?][\"')\]]*\s*$")
WORDLIST_PATHS = ("/usr/share/dict/american-english-large", "/usr/share/dict/american-english-huge",
                  "/usr/share/dict/british-english-large", "/usr/share/dict/american-english")


def words(text: str) -> list[str]:
    return WORD.findall(text)


@lru_cache(maxsize=1)
def english_words(path: str | None = None) -> frozenset[str]:
    """Lowercased words of a large English word list (Debian ``wamerican-large``) plus every
    cefrpy word form."""
    found = next((p for p in ([path] if path else WORDLIST_PATHS) if p and Path(p).exists()), None)
    if found is None:
        raise SystemExit("no English word list: apt-get install wamerican-large (or pass --wordlist FILE)")
    out = {w.strip().lower() for w in Path(found).read_text(encoding="utf-8", errors="replace").splitlines() if w.strip()}
    try:
        from cefrpy import CEFRAnalyzer

        out |= {w.lower() for w in CEFRAnalyzer().yield_words()}
    except ImportError:
        pass
    return frozenset(out)


def _known(w: str, vocab: frozenset[str], prompt_words: set[str]) -> bool:
    lw = w.lower().replace("\u2019", "'")
    if lw in vocab or lw in prompt_words:
        return True
    for suffix in ("'s", "'ll", "'re", "'ve", "'d", "n't", "s'"):  # clitics and possessives
        if lw.endswith(suffix) and (lw[: -len(suffix)] in vocab or lw[: -len(suffix)] in prompt_words):
            return True
    return "-" in lw and all(p in vocab or p in prompt_words for p in lw.split("-"))


def fragments(text: str, prompt: str, vocab: frozenset[str], required=()) -> list[str]:
    """The fragment evidence in ``text`` (empty when there is none); ``required``: the
    constraints' texts."""
    ws = words(text)
    pw = {w.lower() for w in words(prompt + " " + " ".join(required))}
    out = []
    for a, b in zip(ws, ws[1:]):
        la, lb = a.lower(), b.lower()
        if len(la) < len(lb) and lb.startswith(la):
            out.append(f"{a} {b}")
    out += [w for w in ws if not _known(w, vocab, pw)]
    return out


def has_loop(text: str) -> bool:
    sents = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", text) if len(words(s)) >= 2]
    if len(sents) != len(set(sents)):
        return True
    ws = [w.lower() for w in words(text)]
    grams = [tuple(ws[i : i + 4]) for i in range(len(ws) - 3)]
    return len(grams) != len(set(grams))


def present(text: str, constraint: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(constraint) + r"(?![A-Za-z0-9])", text) is not None


def cefr_levels() -> dict[str, int]:
    """Lowest cefrpy level (1 = A1 .. 6 = C2) of every word form."""
    from cefrpy import CEFRAnalyzer

    a = CEFRAnalyzer()
    out: dict[str, int] = {}
    for w, _pos, lvl in a.yield_word_pos_level():
        lw = w.lower()
        out[lw] = min(out.get(lw, 99), int(getattr(lvl, "value", lvl)))
    return out


def pct(xs) -> float:
    xs = list(xs)
    return round(100.0 * sum(bool(x) for x in xs) / len(xs), 2) if xs else float("nan")


def summarize(rows: list[dict], vocab: frozenset[str], control_strings: tuple[str, ...]) -> dict:
    """Figures of one setting. ``rows``: dicts with text, prompt, constraints, satisfied,
    logprob, n_tokens (EOS included), seconds, and reference (optional)."""
    texts = [r["text"] for r in rows]
    frag = [fragments(r["text"], r["prompt"], vocab, r.get("constraints") or ()) for r in rows]
    nw = [len(words(t)) for t in texts]
    tok = [r["n_tokens"] for r in rows]
    out = {
        "n": len(rows),
        "satisfied_pct": pct(r["satisfied"] for r in rows),
        "present_pct": pct(all(present(r["text"], c) for c in r["constraints"]) for r in rows),
        "fragment_pct": pct(frag),
        "loop_pct": pct(has_loop(t) for t in texts),
        "empty_pct": pct(not t.strip() for t in texts),
        "one_word_pct": pct(n == 1 for n in nw),
        "mean_words": round(statistics.fmean(nw), 2) if nw else 0.0,
        "median_words": statistics.median(nw) if nw else 0,
        "sentence_end_pct": pct(SENT_END.search(t) is not None for t in texts),
        "logprob_per_token": round(sum(r["logprob"] for r in rows) / max(1, sum(tok)), 4),
        "seconds_per_input": round(sum(r["seconds"] for r in rows) / max(1, len(rows)), 3),
        "control_token_outputs": sum(any(c in t for c in control_strings) for t in texts),
        "fragment_examples": [f"{e} <- {r['text'].strip()!r}" for e, r in zip(frag, rows) if e][:8],
    }
    refs = [r.get("reference") for r in rows]
    if rows and all(x is not None for x in refs):
        import sacrebleu

        out["chrF"] = round(sacrebleu.corpus_chrf([t.strip() for t in texts], [[x for x in refs]]).score, 2)
        out["BLEU"] = round(sacrebleu.corpus_bleu([t.strip() for t in texts], [[x for x in refs]]).score, 2)
    return out


def cefr_share(texts: list[str], levels: dict[str, int], level: int) -> float:
    """% of output words whose cefrpy level is at most ``level`` (unknown words count as above)."""
    ws = [w.lower() for t in texts for w in words(t)]
    return pct(levels.get(w, 99) <= level for w in ws)
