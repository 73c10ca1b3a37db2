"""The per-request limits of `fstbeam.validate.LIMITS`, applied where every door's request ends
up: `compile_with` and `extend_with` (API keywords, with_request, the CLIs, JSONL lines, batch
rows). Above a limit the request is refused in milliseconds with an error naming the limit,
before any automaton is built (never a MemoryError later); docs/trust.md lists the values.
"""
from __future__ import annotations

from ..errors import SpecError
from ..validate import LIMITS, check_text

__all__ = ["check_request_limits", "check_words"]


def _where(p, default: str) -> str:
    src = getattr(p, "source", "") or ""
    return src if src and src not in ("argument", "base") else default


def check_request_limits(phrases, avoid, prefix) -> None:
    """The user's must-include items (``Phrase``/``AnyOf``), avoid phrases and prefix."""
    if len(phrases) > LIMITS["phrases_per_request"]:
        raise SpecError(f"{len(phrases)} must-include phrases, over the limit of {LIMITS['phrases_per_request']} "
                        "(phrases_per_request, docs/trust.md): split the request")
    for i, p in enumerate(phrases):
        where = _where(p, f"phrases[{i}]")
        texts = getattr(p, "alternatives", None) or (p.text,)
        if len(texts) > LIMITS["alternatives_per_item"]:
            raise SpecError(f"{where} has {len(texts):,} alternatives, over the limit of {LIMITS['alternatives_per_item']:,} "
                            "(alternatives_per_item, docs/trust.md): use a word list or a grammar for long lists")
        for j, t in enumerate(texts):
            check_text(t, where if len(texts) == 1 else f"{where} alternative {j}", limit="phrase_chars")
        total = sum(len(t) for t in texts)
        if total > LIMITS["alternatives_chars"]:
            raise SpecError(f"{where}: its alternatives have {total:,} characters together, over the limit of "
                            f"{LIMITS['alternatives_chars']:,} (alternatives_chars, docs/trust.md): use fewer or shorter ones")
    if len(avoid) > LIMITS["avoid_per_request"]:
        raise SpecError(f"{len(avoid):,} avoid phrases, over the limit of {LIMITS['avoid_per_request']:,} "
                        "(avoid_per_request, docs/trust.md)")
    total = 0
    for i, p in enumerate(avoid):
        total += len(check_text(p.text, _where(p, f"avoid[{i}]"), limit="avoid_chars"))
    if total > LIMITS["avoid_chars"]:
        raise SpecError(f"the avoid phrases have {total:,} characters together, over the limit of "
                        f"{LIMITS['avoid_chars']:,} (avoid_chars, docs/trust.md): shorten them")
    if prefix is not None:
        check_text(prefix, "prefix", limit="prefix_chars")


def check_words(words, source: str) -> None:
    """Every entry of a word list: valid text of at most ``LIMITS['word_chars']`` characters."""
    limit = LIMITS["word_chars"]
    for i, w in enumerate(words):
        if len(w) > limit:
            raise SpecError(f"word list {source}: entry {i + 1} has {len(w):,} characters, over the limit of {limit:,} "
                            f"(word_chars, docs/trust.md): a word list holds words and short terms; use a phrase or "
                            "a grammar for long text")
        check_text(w, f"word list {source}: entry {i + 1}")
