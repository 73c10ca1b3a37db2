"""The per-request limits of `fstbeam.validate.LIMITS`: the one place that checks them.

`ConstraintRequest` checks every request when it is built (`check_request_limits`): every door
(API keywords, with_request, the CLIs, JSONL lines, batch rows, the server) builds one before
any tokenizer loads or automaton is built. Phrases a grammar supplies never pass through a
request: `compile_with` checks them with `check_grammar_phrases` once the grammar is built. Above
a limit the request is refused in milliseconds with an error naming the limit (never a
MemoryError later); docs/trust.md lists the values.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..errors import SpecError
from ..validate import LIMITS, check_text

__all__ = ["check_grammar_phrases", "check_item", "check_request_limits", "check_words"]


def _where(p: Any, default: str) -> str:
    src = getattr(p, "source", "") or ""
    return src if src and src not in ("argument", "base") else default


def _at(where: str, name: str) -> str:
    return f"{where}: {name}" if where else name


def check_item(p: Any, where: str) -> None:
    """One must-include item (``Phrase`` or ``AnyOf``): its texts, how many alternatives, and
    their characters together."""
    texts = getattr(p, "alternatives", None) or (p.text,)
    if len(texts) > LIMITS["alternatives_per_item"]:
        raise SpecError(f"{where} has {len(texts):,} alternatives, over the limit of {LIMITS['alternatives_per_item']:,} "
                        "(alternatives_per_item, docs/trust.md): use a word list or a grammar for long lists")
    for j, t in enumerate(texts):
        check_text(t, where if len(texts) == 1 else f"{where}[{j}]", limit="phrase_chars")
    total = sum(len(t) for t in texts)
    if total > LIMITS["alternatives_chars"]:
        raise SpecError(f"{where}: its alternatives have {total:,} characters together, over the limit of "
                        f"{LIMITS['alternatives_chars']:,} (alternatives_chars, docs/trust.md): use fewer or shorter ones")


def _avoid_texts(avoid: Iterable[Any], where: str) -> int:
    """Check each avoid phrase's text; return their characters together."""
    total = 0
    for i, p in enumerate(avoid):
        total += len(check_text(p.text, _where(p, _at(where, f"avoid[{i}]")), limit="avoid_chars"))
    return total


def check_request_limits(phrases: tuple, avoid: tuple, prefix: str | None, where: str = "") -> None:
    """A request's must-include items (``Phrase``/``AnyOf``), avoid phrases and prefix against
    every per-request limit; ``where`` places the request in its door (``file.jsonl:3``)."""
    if len(phrases) > LIMITS["phrases_per_request"]:
        raise SpecError(f"{_at(where, 'phrases')}: {len(phrases)} must-include items, over the limit of "
                        f"{LIMITS['phrases_per_request']} (phrases_per_request, docs/trust.md): split the request")
    for i, p in enumerate(phrases):
        check_item(p, _where(p, _at(where, f"phrases[{i}]")))
    if len(avoid) > LIMITS["avoid_per_request"]:
        raise SpecError(f"{_at(where, 'avoid')}: {len(avoid):,} avoid phrases, over the limit of "
                        f"{LIMITS['avoid_per_request']:,} (avoid_per_request, docs/trust.md)")
    total = _avoid_texts(avoid, where)
    if total > LIMITS["avoid_chars"]:
        raise SpecError(f"{_at(where, 'avoid')}: {total:,} characters of avoid phrases, over the limit of "
                        f"{LIMITS['avoid_chars']:,} (avoid_chars, docs/trust.md): shorten them")
    if prefix is not None:
        check_text(prefix, _at(where, "prefix"), limit="prefix_chars")


def check_grammar_phrases(phrases: tuple, avoid: tuple, grammar: str) -> None:
    """Phrases and avoid phrases a grammar supplies: each against the per-text limits (a grammar
    is not a request: its phrase count is its own)."""
    for i, p in enumerate(phrases):
        check_item(p, f"grammar {grammar}: phrase {i}")
    _avoid_texts(avoid, f"grammar {grammar}")


def check_words(words, source: str) -> None:
    """Every entry of a word list: valid text of at most ``LIMITS['word_chars']`` characters."""
    limit = LIMITS["word_chars"]
    for i, w in enumerate(words):
        if len(w) > limit:
            raise SpecError(f"word list {source}: entry {i + 1} has {len(w):,} characters, over the limit of {limit:,} "
                            f"(word_chars, docs/trust.md): a word list holds words and short terms; use a phrase or "
                            "a grammar for long text")
        check_text(w, f"word list {source}: entry {i + 1}")
