"""Labels of a loaded artifact's light automata checked against the automata themselves.

A light automaton's ``text`` (and ``literal``) is what fstbeam reports ("phrase 'the cat' met");
its tables are what the search enforces. A re-sealed manifest could relabel one without the
other, so on load the label is spelled with the tokenizer's own tokens (longest match first) and
run through the tables (docs/trust.md):

- phrase: met at the end of its label, and not met by the label without its first or last
  character (so the automaton's phrase is the whole label, not a part of it);
- avoid: the label is blocked (a token disallowed, or a match waiting at the end), and the label
  without its first or last character passes;
- prefix: the label reaches the free state exactly at its end;
- AnyOf / ordered items (``items``): each alternative (ordered: the items joined by spaces) is
  met, and the display text is the one the items give.

Anything else raises :class:`~fstbeam.errors.ArtifactCorruptError`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .light import LightAutomaton
    from .vocab import Vocab

import json

import numpy as np

from ..errors import ArtifactCorruptError

__all__ = ["check_label"]

_TOKEN_MAPS: dict[str, tuple[dict[bytes, int], int]] = {}


def _token_map(vocab: Vocab) -> tuple[dict[bytes, int], int]:
    """(text token bytes -> id, longest token), per tokenizer (a few kept)."""
    hit = _TOKEN_MAPS.get(vocab.fingerprint)
    if hit is None:
        tb = vocab.token_bytes
        m = {}
        for i in np.asarray(vocab.text_ids).tolist():
            b = tb[i]
            if b and b not in m:
                m[b] = i
        hit = (m, max(map(len, m), default=0))
        if len(_TOKEN_MAPS) >= 4:
            _TOKEN_MAPS.pop(next(iter(_TOKEN_MAPS)))
        _TOKEN_MAPS[vocab.fingerprint] = hit
    return hit


def _tokens(text: str, vocab: Vocab) -> list[int] | None:
    """Longest-match spelling of ``text`` with text tokens; None if some byte has no token."""
    m, longest = _token_map(vocab)
    data = text.encode("utf-8")
    out, i = [], 0
    while i < len(data):
        for n in range(min(longest, len(data) - i), 0, -1):
            t = m.get(data[i:i + n])
            if t is not None:
                out.append(t)
                i += n
                break
        else:
            return None
    return out


def _run(a: LightAutomaton, ids: list[int]) -> list[int]:
    """States after each token (-1 once a token is disallowed)."""
    out, q = [], a.start
    for t in ids:
        q = a.next_state(q, t) if q >= 0 else -1
        out.append(q)
    return out


def _met(a: LightAutomaton, text: str, vocab: Vocab) -> bool | None:
    """Whether ``text`` as a whole output ends in a final state (None: it cannot be spelled)."""
    ids = _tokens(text, vocab)
    if ids is None:
        return None
    states = _run(a, ids)
    return bool(states and states[-1] >= 0 and a.final[states[-1]])


def check_label(a: LightAutomaton, vocab: Vocab, path: Any, where: str) -> None:
    """Raise ArtifactCorruptError if automaton ``a`` does not enforce what its label says."""
    def bad(why: str) -> ArtifactCorruptError:
        return ArtifactCorruptError(f"{path}: {where} is labelled {a.text!r:.80} but {why}: the manifest was edited; "
                                    "recompile the artifact with compile-constraints")

    if a.items:
        _check_items(a, vocab, bad)
        return
    if a.literal != a.text.encode("utf-8"):
        raise bad("its literal bytes spell another text")
    text = a.text
    parts = [text[1:], text[:-1]] if len(text) > 1 else []
    if a.kind in ("phrase", "prefix"):
        if _met(a, text, vocab) is False:
            raise bad(f"its automaton does not {'meet' if a.kind == 'phrase' else 'complete'} that text")
        if a.kind == "phrase" and any(_met(a, p, vocab) for p in parts if p.strip()):
            raise bad("its automaton is met by a part of that text (it enforces a shorter phrase)")
        if a.kind == "prefix" and parts and _met(a, parts[1], vocab):
            raise bad("its automaton is complete before the end of that text (it enforces a shorter prefix)")
        return
    ids = _tokens(text, vocab)  # avoid
    if ids is not None:
        states = _run(a, ids)
        if states and states[-1] >= 0 and a.final[states[-1]]:
            raise bad("its automaton allows that text")
    for p in parts:
        ids = _tokens(p, vocab) if p.strip() else None
        if ids is not None and (min(_run(a, ids)) < 0 or not a.final[_run(a, ids)[-1]]):
            raise bad("its automaton blocks a part of that text (it avoids a shorter phrase)")


def _check_items(a: LightAutomaton, vocab: Vocab, bad: Callable[[str], Exception]) -> None:
    try:
        spec = json.loads(a.items)
        ordered, items = bool(spec["ordered"]), [[str(t) for t in alts] for alts in spec["items"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise bad(f"its items are not readable ({type(exc).__name__})") from None
    if not items or not all(items):
        raise bad("it lists no items")
    shown = (" ... " if ordered else ", ").join("|".join(alts) for alts in items)
    if shown != a.text:
        raise bad(f"its items read {shown!r:.80}")
    samples = [" ".join(alts[0] for alts in items)] if ordered else list(items[0])
    for s in samples:
        if _met(a, s, vocab) is False:
            raise bad(f"its automaton is not met by {s!r:.60}")
