"""Compiled per-request automata of short phrases, remembered per tokenizer.

A server sees the same terminology in many requests; a phrase's light automaton depends only on
its text, its options and the tokenizer, and is immutable (read-only arrays), so one compile can
serve every request that names it. Kept in the process's byte-budget cache
(`fstbeam.contract.cache`), keyed by the token index's fingerprint; long texts (avoid lists of
whole documents) are compiled each time and never kept.
"""
from __future__ import annotations

from ...contract.cache import shared_cache
from ...contract.light import LightAutomaton
from .token_index import TokenIndex

__all__ = ["MAX_BYTES", "forget", "light_phrase", "light_phrases", "light_avoid"]

#: Texts up to this many UTF-8 bytes are remembered.
MAX_BYTES = 256


def _size(a: LightAutomaton) -> int:
    """The automaton's own bytes (its ``token_class`` is the index's, shared by all)."""
    return sum(int(v.nbytes) for v in a.tables().values()) + len(a.literal) + 512


def _remembered(kind: str, text: str, index: TokenIndex, build, word_boundary: bool, case_sensitive: bool,
                source: str) -> LightAutomaton:
    if len(text) > MAX_BYTES or len(text.encode("utf-8")) > MAX_BYTES:
        return build()
    key = ("light", index.fingerprint, kind, text, bool(word_boundary), bool(case_sensitive), source)
    return shared_cache().get(key, build, size=_size)


def light_phrase(text: str, index: TokenIndex, *, word_boundary: bool = True, case_sensitive: bool = True,
                 source: str = "") -> LightAutomaton:
    """`automaton.compile_phrase`, remembered for short texts."""
    from .automaton import compile_phrase

    return _remembered("phrase", text, index, lambda: compile_phrase(
        text, index, word_boundary=word_boundary, case_sensitive=case_sensitive, source=source),
        word_boundary, case_sensitive, source)


def light_phrases(items: list[tuple[str, bool, bool]], index: TokenIndex) -> list[LightAutomaton]:
    """`light_phrase` of each ``(text, word_boundary, case_sensitive)``; those not remembered are
    compiled together (`batch.compile_phrases`: one numpy pass for a request's phrases)."""
    from .batch import compile_phrases

    cache = shared_cache()
    keys = [("light", index.fingerprint, "phrase", t, bool(wb), bool(cs), "") for t, wb, cs in items]
    found = {k: cache.peek(k) for k in dict.fromkeys(keys)}
    groups: dict[tuple[bool, bool], list] = {}
    for k, a in found.items():
        if a is None:
            groups.setdefault((k[4], k[5]), []).append(k)
    for (wb, cs), todo in groups.items():
        for k, a in zip(todo, compile_phrases([k[3] for k in todo], index, word_boundary=wb, case_sensitive=cs)):
            found[k] = a
            if len(k[3]) <= MAX_BYTES and len(k[3].encode("utf-8")) <= MAX_BYTES:
                cache.put(k, a, _size(a))
    return [found[k] for k in keys]


def light_avoid(text: str, index: TokenIndex, *, word_boundary: bool = True, case_sensitive: bool = True,
                source: str = "") -> LightAutomaton:
    """`automaton.compile_avoid`, remembered for short texts."""
    from .automaton import compile_avoid

    return _remembered("avoid", text, index, lambda: compile_avoid(
        text, index, word_boundary=word_boundary, case_sensitive=case_sensitive, source=source),
        word_boundary, case_sensitive, source)


def forget() -> None:
    """Drop every remembered automaton (benchmarks time fresh compiles with it)."""
    shared_cache().discard(lambda key: key[0] == "light")
