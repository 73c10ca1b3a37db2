"""Alternatives, order and the sentence-initial capital: one light automaton per constraint.

A must-include *item* is a :class:`~fstbeam.compiler.spec.Phrase` or an :class:`AnyOf` of
alternative spellings ("Haus" / "Hauses" / "Häuser"). Three things need more than the one-literal
automaton of :mod:`fstbeam.compiler.light.automaton`:

- ``AnyOf``: met when any alternative occurs (overlapping alternatives and an alternative that is
  a prefix of another included: every alternative's partial matches are tracked at once);
- ``Phrase(..., sentence_case=True)``: "the hero" is also met as "The hero" where a sentence
  starts (the start of the output, or after ``.``, ``!`` or ``?`` and optional white space);
- ``ordered=True``: the items must occur in the given order without overlapping.

All three compile to ONE light automaton (kind ``"phrase"``) whose states are built by a subset
construction over ``(stage, partial matches, previous byte is a word byte, a match waits for its
right boundary, at a sentence start)``. ``stage`` counts the items already met, in order: the
earliest-ending occurrence of item ``i`` is taken (an exchange argument shows that loses no
solution), and the byte that confirms its right boundary may start item ``i + 1``. Progress is
the bytes of the met items (each counted at its longest alternative) plus the longest partial
match of the current item: DBA sees one automaton and one progress value, as for a plain phrase.
"""
from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ...contract.light import LightAutomaton
from ...contract.vocab import Vocab
from ...errors import SpecError, UnsatisfiableConstraintError
from ...fst.text import IS_WORD_BYTE
from .arrays import SMALL_ROWS, minimize, read_only, renumber, renumber_rows
from .automaton import as_index, lift_light
from .candidates import phrase_candidates
from .fallback import lift_with_fallback
from .phrase_dfa import PhraseDFA
from .token_index import TokenIndex

__all__ = ["AnyOf", "Stage", "compile_items", "is_general", "items_char_dfa", "stages_of"]

#: Bytes after which a sentence starts (with optional white space in between).
SENTENCE_END = b".!?"
WHITE = b" \t\n\r"


@dataclass(frozen=True, init=False)
class AnyOf:
    """A must-include constraint met by any one of its alternatives.

    ``fstbeam.AnyOf("Haus", "Hauses", "Häuser")``; in a ``phrases=`` list a nested list means the
    same. Options apply to every alternative, as for :class:`~fstbeam.compiler.spec.Phrase`.
    """

    alternatives: tuple[str, ...]
    word_boundary: bool
    case_sensitive: bool
    sentence_case: bool
    source: str

    def __init__(self, *alternatives, word_boundary: bool = True, case_sensitive: bool = True,
                 sentence_case: bool = False, source: str = "argument"):
        if len(alternatives) == 1 and isinstance(alternatives[0], (list, tuple)):
            alternatives = tuple(alternatives[0])
        alts, seen = [], set()  # a set: AnyOf of thousands of texts is refused fast, not in n**2
        for a in alternatives:
            text = getattr(a, "text", a)
            if not isinstance(text, str) or not text.strip():
                raise SpecError(f"empty alternative {a!r} in AnyOf ({source}): every alternative must be non-empty text")
            if "\x00" in text:
                raise SpecError(f"alternative {text!r} ({source}) contains a NUL byte, which no token can spell")
            if text not in seen:
                seen.add(text)
                alts.append(text)
        if not alts:
            raise SpecError(f"AnyOf() with no alternatives ({source}): give at least one text, or drop the constraint")
        for name, value in (("alternatives", tuple(alts)), ("word_boundary", word_boundary),
                            ("case_sensitive", case_sensitive), ("sentence_case", sentence_case), ("source", source)):
            object.__setattr__(self, name, value)

    @property
    def text(self) -> str:
        """A display form: ``Haus|Hauses|Häuser``."""
        return "|".join(self.alternatives)


@dataclass(frozen=True)
class Stage:
    """One item of the automaton: its alternatives as ``(bytes, only at a sentence start)``."""

    alts: tuple[tuple[bytes, bool], ...]
    word_boundary: bool
    case_sensitive: bool

    @property
    def weight(self) -> int:
        """Progress of a met item: its longest alternative in bytes."""
        return max(len(lit) for lit, _ in self.alts)


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def stage_of(item) -> Stage:
    """The :class:`Stage` of a ``Phrase`` or ``AnyOf`` (sentence-case alternatives added)."""
    texts = item.alternatives if isinstance(item, AnyOf) else (item.text,)
    sentence = getattr(item, "sentence_case", False) and item.case_sensitive
    alts: list[tuple[bytes, bool]] = [(t.encode("utf-8"), False) for t in texts]
    if sentence:
        alts += [(_capitalized(t).encode("utf-8"), True) for t in texts if _capitalized(t) not in texts]
    return Stage(tuple(dict.fromkeys(alts)), item.word_boundary, item.case_sensitive)


def stages_of(items: Iterable) -> tuple[Stage, ...]:
    return tuple(stage_of(i) for i in items)


def is_general(item) -> bool:
    """True if ``item`` needs this module (a plain phrase compiles with ``light.compile_phrase``)."""
    if isinstance(item, AnyOf):
        return len(item.alternatives) > 1 or (item.sentence_case and item.case_sensitive)
    return bool(getattr(item, "sentence_case", False)) and item.case_sensitive


def describe_items(items, ordered: bool) -> str:
    texts = [i.text for i in items]
    return " ... ".join(texts) if ordered else ", ".join(texts)


# ---------------------------------------------------------------------------------------------
# Character DFA
# ---------------------------------------------------------------------------------------------
def _fold(b: int) -> int:
    return b + 32 if 0x41 <= b <= 0x5A else b


def _alphabet(stages: tuple[Stage, ...]) -> tuple[list[int], bool]:
    sentence = any(only for s in stages for _, only in s.alts)
    chars = set()
    for s in stages:
        for lit, _ in s.alts:
            for b in lit:
                chars.add(b)
                if not s.case_sensitive and 0x61 <= _fold(b) <= 0x7A:
                    chars.update({_fold(b), _fold(b) - 32})
    if sentence:
        chars.update(SENTENCE_END + WHITE)
    return sorted(chars), sentence


def items_char_dfa(stages: tuple[Stage, ...]) -> PhraseDFA:
    """Minimal DFA (over byte symbols) of the outputs that contain the stages' items in order
    (one stage: contains any alternative). ``final``: met, or the last item matched at the end of
    the output; ``progress`` as in the module docstring."""
    if not stages:
        raise ValueError("items_char_dfa needs at least one item")
    return _items_char_dfa(tuple(stages))[0]


class _Tries:
    """The alternatives of every stage as byte tries (case-folded where the stage ignores case):
    a partial match is a trie node, so alternatives that share a beginning share their state,
    and one start symbol reaches one node instead of every alternative starting with it. Two
    roots per stage: alternatives allowed anywhere, and those allowed only at a sentence start."""

    def __init__(self, stages: tuple[Stage, ...]):
        self.children: list[dict[int, int]] = []
        self.need_r: list[bool | None] = []  # None: no alternative ends here
        self.depth: list[int] = []
        self.roots: list[tuple[int, int]] = []
        for s in stages:
            plain, sent = self._node(0), self._node(0)
            for lit, only in s.alts:
                u = sent if only else plain
                for b in (lit if s.case_sensitive else bytes(_fold(x) for x in lit)):
                    v = self.children[u].get(b)
                    if v is None:
                        v = self.children[u][b] = self._node(self.depth[u] + 1)
                    u = v
                self.need_r[u] = s.word_boundary and bool(IS_WORD_BYTE[lit[-1]])
            self.roots.append((plain, sent))

    def _node(self, depth: int) -> int:
        self.children.append({})
        self.need_r.append(None)
        self.depth.append(depth)
        return len(self.depth) - 1


@functools.lru_cache(maxsize=16)  # an item is built for its satisfiability check, then compiled
def _items_char_dfa(stages: tuple[Stage, ...]) -> tuple[PhraseDFA, np.ndarray]:
    """(`items_char_dfa`, each state's fallback: the state with the same stage and flags and no
    partial match, -1 for none; ``fallback.lift_with_fallback``)."""
    alphabet, sentence = _alphabet(stages)
    word_sym, nonword_sym = len(alphabet), len(alphabet) + 1
    sym_of_byte = np.where(IS_WORD_BYTE, word_sym, nonword_sym).astype(np.int16)
    for i, b in enumerate(alphabet):
        sym_of_byte[b] = i
    sym_byte: list[int | None] = [*alphabet, None, None]
    sym_word = [bool(IS_WORD_BYTE[b]) for b in alphabet] + [True, False]
    n = len(stages)
    tries = _Tries(stages)
    children, need_r, depth = tries.children, tries.need_r, tries.depth
    cs = [s.case_sensitive for s in stages]
    wb = [s.word_boundary for s in stages]
    track_prev = [s.word_boundary and any(IS_WORD_BYTE[lit[0]] for lit, _ in s.alts) for s in stages]
    folded_syms: dict[int, list[int]] = {}  # folded byte -> the symbols of both cases
    for i, b in enumerate(alphabet):
        folded_syms.setdefault(_fold(b), []).append(i)
    exact_syms = {b: [i] for i, b in enumerate(alphabet)}
    base = np.concatenate([[0], np.cumsum([s.weight for s in stages])]).astype(int)
    MET = ("met",)

    def fresh(stage, prev_word, sent):
        if stage == n:
            return MET
        return (stage, frozenset(), prev_word and track_prev[stage], False, sent and sentence)

    def step(st, sym):
        if st is MET:
            return MET
        stage, partial, prev_word, pending, sent = st
        c, w = sym_byte[sym], sym_word[sym]
        new_sent = sentence and ((c is not None and c in SENTENCE_END) or (sent and c is not None and c in WHITE))
        if pending and not w:  # the match is confirmed by this byte, which may start the next item
            return step(fresh(stage + 1, True, sent), sym)
        grown, done_now, done_wait = set(), False, False
        if c is not None:
            cf = c if cs[stage] else _fold(c)
            reached = [children[u].get(cf) for u in partial]
            plain, at_sentence = tries.roots[stage]
            if not (wb[stage] and IS_WORD_BYTE[cf] and prev_word):  # a match may start here
                reached.append(children[plain].get(cf))
                if sent:
                    reached.append(children[at_sentence].get(cf))
            for v in reached:
                if v is None:
                    continue
                if need_r[v] is not None:
                    done_wait |= need_r[v]
                    done_now |= not need_r[v]
                if children[v]:
                    grown.add(v)
        if done_now:  # the item is met at this byte; the next one starts after it
            return fresh(stage + 1, w, new_sent)
        return (stage, frozenset(grown), w and track_prev[stage], done_wait, new_sent)

    def progress(st) -> int:
        if st is MET:
            return int(base[n])
        stage, partial, _, pending, _ = st
        if pending:
            return int(base[stage + 1])
        return int(base[stage]) + max((depth[u] for u in partial), default=0)

    start = fresh(0, False, True)
    ids, states, rows, todo = {start: 0}, [start], [], deque([start])
    nsym = len(sym_byte)

    def state_id(nxt) -> int:
        if nxt not in ids:
            ids[nxt] = len(states)
            states.append(nxt)
            todo.append(nxt)
        return ids[nxt]

    # A symbol that extends none of a state's partial matches acts as it does from the same state
    # without them: one such row per (stage, previous byte, pending, sentence start), then only
    # the symbols the partial matches continue with (linear in the states, not states x items).
    base_rows: dict = {}
    fb_raw: dict[int, int] = {}
    while todo:
        st = todo.popleft()
        if st is MET:
            rows.append([0] * nsym)  # patched below: MET's own id
            continue
        key = (st[0], st[2], st[3], st[4])
        entry = base_rows.get(key)
        if entry is None:  # next states, interned when first used (so no unreachable state is made)
            empty = (st[0], frozenset(), st[2], st[3], st[4])
            entry = base_rows[key] = ([step(empty, s) for s in range(nsym)], [-1] * nsym, set(range(nsym)))
        raw, bid, unresolved = entry
        if st[1]:  # its fallback: the same flags without partial matches
            fb_raw[len(rows)] = state_id((st[0], frozenset(), st[2], st[3], st[4]))
        syms = exact_syms if cs[st[0]] else folded_syms
        over = {s: state_id(step(st, s)) for u in st[1] for b in children[u] for s in syms.get(b, ())}
        for s in sorted(unresolved):  # a base row's targets, in symbol order, when first taken
            if s not in over:
                bid[s] = state_id(raw[s])
                unresolved.discard(s)
        row = bid.copy()
        for s, t in over.items():
            row[s] = t
        rows.append(row)
    if MET in ids:
        rows[ids[MET]] = [ids[MET]] * nsym
    delta = np.array(rows, dtype=np.int64)
    final = np.array([st is MET or (st[0] == n - 1 and st[3]) for st in states])
    prog = np.array([progress(st) for st in states], dtype=np.int32)
    met = np.array([st is MET for st in states])
    mdelta, block = _minimize_rows(delta, list(zip(met.tolist(), final.tolist(), prog.tolist())))
    nb = mdelta.shape[0]
    final_b = np.zeros(nb, dtype=bool)
    final_b[block[final]] = True
    prog_b = np.zeros(nb, dtype=np.int32)
    prog_b[block] = prog
    dfa = PhraseDFA(read_only(mdelta), read_only(sym_of_byte), 0, read_only(final_b), read_only(np.zeros(nb, dtype=bool)),
                    read_only(prog_b), word_sym, nonword_sym)
    # A block falls back where its states do, unless it holds a state without partial matches.
    fb = np.full(nb, -1, np.int64)
    if fb_raw:
        src = np.fromiter(fb_raw.keys(), np.int64, len(fb_raw))
        fb[block[src]] = block[np.fromiter(fb_raw.values(), np.int64, len(fb_raw))]
    plain = np.ones(len(states), bool)
    plain[list(fb_raw)] = False
    fb[block[plain]] = -1
    return dfa, read_only(fb)


def _minimize_rows(delta: np.ndarray, labels: list) -> tuple[np.ndarray, np.ndarray]:
    """``arrays.minimize`` (same partition, same numbering), each refinement round keyed by a
    hash of the rows: ``np.unique(axis=0)`` sorted 10,000 rows x 60 symbols in ~20 ms a round.
    A hash collision (checked) falls back to the exact rows."""
    if delta.size <= SMALL_ROWS:
        return minimize(delta, labels)
    block = renumber(labels)
    weights = np.random.default_rng(0).integers(1, 1 << 62, size=delta.shape[1] + 1).astype(np.uint64) | np.uint64(1)
    while True:
        rows = np.column_stack([block, block[delta]])
        code = (rows.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)  # wraps: a hash
        _, first, inv = np.unique(code, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        if (rows == rows[first[inv]]).all():
            rank = np.empty(len(first), np.int64)
            rank[np.argsort(first, kind="stable")] = np.arange(len(first))
            new = rank[inv]
        else:
            new = renumber_rows(rows)
        if new.max() == block.max():
            break
        block = new
    _, rep = np.unique(block, return_index=True)
    return block[delta[rep]].astype(np.int32), block


# ---------------------------------------------------------------------------------------------
# Light automaton
# ---------------------------------------------------------------------------------------------
def _candidates(stages: tuple[Stage, ...], index: TokenIndex) -> np.ndarray:
    """Tokens whose transition may differ from their class default: the candidates of every
    alternative (``automaton._phrase_candidates``), and with a sentence-case alternative every token
    holding ``.``/``!``/``?`` or made only of white space (they set or keep the sentence start)."""
    parts: list[np.ndarray] = []
    for wb in (True, False):  # the alternatives of every stage at once, by their options
        for cs in (True, False):
            lits = list(dict.fromkeys(lit for s in stages if (s.word_boundary, s.case_sensitive) == (wb, cs) for lit, _ in s.alts))
            if lits:
                parts += phrase_candidates(lits, index, word_boundary=wb, case_sensitive=cs)
    if any(only for s in stages for _, only in s.alts):
        parts += [index.ids_containing(bytes([b]), nonword_before=False, nonword_after=False) for b in SENTENCE_END]
        white = np.isin(index.padded, np.frombuffer(WHITE, np.uint8))
        pos = np.arange(index.padded.shape[1])[None, :] < index.lengths[:, None]
        parts.append(np.flatnonzero((index.lengths > 0) & (white | ~pos).all(axis=1)).astype(np.int64))
    ids = np.sort(np.concatenate([np.zeros(0, np.int64), *parts]).astype(np.int64))  # a sort: numpy's hashing
    return ids[np.r_[True, ids[1:] != ids[:-1]]] if len(ids) else ids  # np.unique took 49 ms for 230,000 ids


def compile_items(items, index: TokenIndex | Vocab, *, ordered: bool = False, source: str = "") -> LightAutomaton:
    """One must-include light automaton for ``items`` (``Phrase``/``AnyOf``): met when every
    item occurs in the given order (``ordered=True``), or, for one item, when any of its
    alternatives occurs. Raises :class:`UnsatisfiableConstraintError` naming the items when no
    token sequence of the tokenizer can meet them."""
    items = tuple(items)
    if not items:
        raise SpecError("no phrases to compile: give at least one")
    if len(items) > 1 and not ordered:
        raise ValueError("several items compile to one automaton only with ordered=True")
    index = as_index(index)
    stages = stages_of(items)
    dfa, fallback = _items_char_dfa(stages)
    text = describe_items(items, ordered)
    cands = _candidates(stages, index)
    longest = max((lit for s in stages for lit, _ in s.alts), key=len)
    try:
        a = lift_with_fallback(text, longest, dfa, fallback, index, cands, source)
    except UnsatisfiableConstraintError:
        raise _why_impossible(items, index, ordered, source) from None
    from dataclasses import replace

    wb = all(s.word_boundary for s in stages)
    cs = all(s.case_sensitive for s in stages)
    return replace(a, word_boundary=wb, case_sensitive=cs, max_progress=int(dfa.progress.max()),
                   items=_encode(items, ordered))


def _encode(items, ordered: bool) -> str:
    """The items as JSON, stored with the automaton (artifact manifest, display)."""
    import json

    return json.dumps({"ordered": ordered, "items": [list(getattr(i, "alternatives", (i.text,))) for i in items]},
                      ensure_ascii=False)


def _why_impossible(items, index: TokenIndex, ordered: bool, source: str) -> UnsatisfiableConstraintError:
    where = f" ({source})" if source else ""
    for item in items:
        try:
            if len(items) > 1 or isinstance(item, AnyOf):
                _lift_one(item, index)
        except UnsatisfiableConstraintError:
            alts = list(getattr(item, "alternatives", (item.text,)))
            return UnsatisfiableConstraintError(
                f"none of the alternatives {alts}{where} can be spelled by any token sequence of this tokenizer"
                + (" at word boundaries; pass word_boundary=False or check the texts" if item.word_boundary else ""),
                tuple(alts),
            )
    what = [i.text for i in items]
    return UnsatisfiableConstraintError(
        f"the phrases {what}{where} can never be met{' in this order' if ordered else ''} with this tokenizer: "
        "check the texts" + (", or drop ordered=True" if ordered else ""),
        tuple(what),
    )


def _lift_one(item, index: TokenIndex) -> None:
    stages = stages_of([item])
    dfa = items_char_dfa(stages)
    lift_light("phrase", item.text, stages[0].alts[0][0], dfa, index, _candidates(stages, index), True, True, "")
