"""The compiled object a user holds (its artifact form: `artifact`), and a host-side walker over it."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DisallowedTokenError
from .artifact import read_artifact, save_artifact
from .hard import HardTables
from .layout import light_order
from .light import LightAutomaton
from .vocab import Vocab

#: Arrays derived from others (or shared with the tokenizer index): not part of the identity.
_DERIVED = frozenset({"dist", "token_class", "char_state"})


@dataclass(frozen=True, eq=False)
class CompiledConstraints:
    """Immutable, shareable result of :func:`fstbeam.compile_constraints`.

    ``hard`` is the token automaton of word lists and grammars (``None``: no such constraint);
    ``phrases`` / ``avoid`` / ``prefix`` are small per-request automata (docs/tables.md).
    """

    vocab: Vocab
    hard: HardTables | None
    phrases: tuple[LightAutomaton, ...] = ()
    avoid: tuple[LightAutomaton, ...] = ()
    prefix: Any = None
    spec: dict[str, Any] = field(default_factory=dict)
    spec_hash: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    # OpenFst binary of the hard token automaton as read from an artifact; a compile leaves it
    # None and `token_fst_bytes` writes it from ``hard`` when asked (saving an artifact).
    token_fst: bytes | None = None
    char_fst: bytes | None = None  # OpenFst binary of the hard character automaton
    char_state: np.ndarray | None = None  # token state -> character state

    @property
    def width(self) -> int:
        return self.vocab.width

    @property
    def eos_ids(self) -> tuple[int, ...]:
        return self.vocab.eos_ids

    @property
    def light(self) -> tuple[LightAutomaton, ...]:
        return light_order(self.phrases, self.avoid, self.prefix)

    def token_fst_bytes(self) -> bytes | None:
        """The hard token automaton as an OpenFst binary (None: no hard automaton). With shared
        interiors (a JSON Schema) it can be far larger than the tables: ``hard.token_fst_arcs()``
        counts its arcs first (an artifact leaves it out past `artifact.TOKEN_FST_MAX_ARCS`)."""
        if self.token_fst is not None:
            return self.token_fst
        return self.hard.token_fst() if self.hard is not None else None

    def matcher(self) -> "Matcher":
        return Matcher(self)

    @functools.cached_property
    def fingerprint(self) -> str:
        """A hash of what decoding reads: the tokenizer, the hard tables and every light
        automaton, in order. Two artifacts with the same fingerprint constrain every output
        the same way, however they were built (one compile, or a base plus per-input requests)."""
        h = hashlib.sha256(self.vocab.fingerprint.encode())
        for part in (self.hard, *self.light):
            h.update(b"|")
            if part is None:
                continue
            for f in dataclasses.fields(part):
                value = getattr(part, f.name)
                if isinstance(value, np.ndarray) and f.name not in _DERIVED:
                    h.update(f"{f.name}:{value.dtype}:{value.shape}".encode())
                    h.update(np.ascontiguousarray(value).tobytes())
                elif isinstance(value, (int, str, bytes, bool)) and f.name not in ("source", "fingerprint"):
                    h.update(f"{f.name}={value!r}".encode())
        return h.hexdigest()

    def save(self, path: str | os.PathLike[str]) -> None:
        save_artifact(self, path)

    def __repr__(self) -> str:
        """One line (the tables are megabytes): what constrains the output, the tokenizer, the size."""
        spec = self.spec or {}
        words = spec.get("words")
        hard = [f"cefr={spec['cefr']!r}" if spec.get("cefr") else
                f"words={str(words.get('source') if isinstance(words, dict) else words)!r:.60}" if words else "",
                f"grammar={str(spec['grammar'])!r:.60}" if spec.get("grammar") else ""]
        parts = [p for p in hard if p]
        if self.hard is not None and not parts:
            parts.append("hard automaton")
        for name, items in (("phrases", self.phrases), ("avoid", self.avoid)):
            if items:
                shown = [a.text for a in items[:3]]
                parts.append(f"{name}={shown!r:.80}" + (f" (+{len(items) - 3} more)" if len(items) > 3 else ""))
        if self.prefix is not None:
            parts.append(f"prefix={self.prefix.text!r:.60}")
        size = f", {self.hard.num_states} states, {self.hard.nbytes / 1e6:.1f} MB" if self.hard is not None else ""
        v = self.vocab
        return (f"CompiledConstraints({', '.join(parts) or 'no constraint'}; tokenizer {(v.name or v.kind)!r:.60}, "
                f"{v.width} ids{size})")

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tokenizer": self.vocab.describe(), "fingerprint": self.vocab.fingerprint[:16]}
        if self.hard is not None:
            h = self.hard
            out.update(
                states=h.num_states,
                blocks=len(h.block_ptr) - 1,
                token_arcs_stored=len(h.block_key),
                dense_rows=len(h.dense_masks),
                table_bytes=h.nbytes,
            )
        out["phrases"] = [p.text for p in self.phrases]
        out["avoid"] = [p.text for p in self.avoid]
        out["prefix"] = None if self.prefix is None else self.prefix.text
        return out


class Matcher:
    """Walks one hypothesis through all constraints on the host (not the decoder's fast path)."""

    def __init__(self, cc: CompiledConstraints) -> None:
        self.cc = cc
        self.hard_state = cc.hard.start if cc.hard is not None else None
        self.light_states = [a.start for a in cc.light]
        self.finished = False
        self.history: list[int] = []

    def _text_allowed(self) -> np.ndarray:
        cc = self.cc
        if cc.hard is not None:
            assert self.hard_state is not None  # set with the hard automaton
            ids = cc.hard.allowed_text_tokens(self.hard_state).astype(np.int64)
        else:
            ids = cc.vocab.text_ids
        for a, s in zip(cc.light, self.light_states):
            if len(ids) == 0:
                break
            ids = ids[a.row(s)[ids] >= 0]
        return ids

    def eos_allowed(self) -> bool:
        return not self.finished and self.is_final()

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted ids of every token allowed next (EOS included where the output may end)."""
        if self.finished:
            return np.zeros(0, np.int64)
        ids = self._text_allowed()
        if self.eos_allowed():
            ids = np.union1d(ids, np.asarray(self.cc.eos_ids, np.int64))
        return ids

    def is_final(self) -> bool:
        """True when the output may end here: hard automaton final and every light automaton final."""
        cc = self.cc
        if cc.hard is not None and not cc.hard.final[self.hard_state]:
            return False
        return all(a.is_final(s) for a, s in zip(cc.light, self.light_states))

    def phrases_met(self) -> list[bool]:
        return [bool(a.is_final(s)) for a, s in zip(self.cc.phrases, self.light_states)]

    def advance(self, token_id: int) -> None:
        token_id = int(token_id)
        if self.finished:
            raise DisallowedTokenError(f"token {token_id} after EOS: the hypothesis already ended")
        if token_id in self.cc.eos_ids:
            if not self.is_final():
                raise DisallowedTokenError(
                    f"EOS ({token_id}) not allowed here: the constraints are not satisfied yet "
                    f"(phrases met: {self.phrases_met()})"
                )
            self.finished = True
            self.history.append(token_id)
            return
        cc = self.cc
        new_hard = self.hard_state
        if cc.hard is not None:
            assert self.hard_state is not None  # set with the hard automaton
            new_hard = cc.hard.next_state(self.hard_state, token_id)
            if new_hard < 0:
                raise DisallowedTokenError(self._why(token_id, "the word list / grammar"))
        new_light = []
        for a, s in zip(cc.light, self.light_states):
            n = a.next_state(s, token_id)
            if n < 0:
                raise DisallowedTokenError(self._why(token_id, f"{a.kind} {a.text!r}"))
            new_light.append(n)
        self.hard_state, self.light_states = new_hard, new_light
        self.history.append(token_id)

    def _why(self, token_id: int, what: str) -> str:
        tb = self.cc.vocab.token_bytes[token_id] if 0 <= token_id < self.cc.width else None
        return f"token {token_id} ({tb!r}) is not allowed by {what} after {len(self.history)} tokens"


def load_constraints(path: str | os.PathLike[str], tokenizer: Any = None) -> CompiledConstraints:
    """Load an artifact written by :meth:`CompiledConstraints.save`. With ``tokenizer`` (HF
    tokenizer, path, ``"default"`` or Vocab) its fingerprint must match the artifact's."""
    return CompiledConstraints(**read_artifact(path, tokenizer))
