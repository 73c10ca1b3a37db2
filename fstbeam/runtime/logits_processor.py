"""A ``transformers`` ``LogitsProcessor`` for users who keep ``model.generate``.

>>> proc = FstLogitsProcessor(cc, eos_ids=[1])                   # doctest: +SKIP
>>> model.generate(ids, num_beams=5, logits_processor=LogitsProcessorList([proc]))

Supported (mask-only) constraints: word lists and grammars (the hard automaton), a required
prefix, avoid phrases. The processor masks every token the constraints do not allow next (special
tokens included) and allows EOS only where the output may end.

Limits (use :class:`fstbeam.Decoder` for these):

- must-include phrases are refused: a mask cannot make beam search *find* a phrase; that needs
  DBA's candidates and banks;
- no optimal stopping and no distance-to-final pruning: ``generate`` may stop at
  ``max_new_tokens`` with an output that is not accepted (an unfinished word);
- the automaton state of each row is recovered from the generated suffix (a dictionary lookup
  per row per step, on the host), because ``generate`` reorders beams without telling processors;
- one processor per ``generate`` call (or call :meth:`reset`): the prompt length is taken from
  the first call. Rows that reach a dead end get EOS only, so no row is ever all ``-inf``.

The scores are returned as a new tensor (out of place).
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..errors import DecodeError, DisallowedTokenError
from ..kernels.bitmask import unpack_bitmask_torch as unpack_bits
from .search.tables import InputConstraints, Tables

__all__ = ["FstLogitsProcessor"]

try:  # subclass the real base class when transformers is present
    from transformers import LogitsProcessor as _Base
except Exception:  # pragma: no cover
    _Base = object


class FstLogitsProcessor(_Base):
    """Mask the scores of ``model.generate`` with compiled constraints (mask-only modes)."""

    supported_modes = ("words", "grammar", "prefix", "avoid")

    def __init__(self, constraints, *, eos_ids: Sequence[int] | None = None, device=None):
        if constraints is None:
            raise DecodeError("FstLogitsProcessor needs compiled constraints")
        if len(constraints.phrases):
            raise DecodeError(
                "must-include phrases cannot be enforced by a logits processor (a mask cannot make beam search "
                "find them): decode with fstbeam.Decoder, which uses dynamic beam allocation"
            )
        self.cc = constraints
        self.eos_ids = tuple(int(e) for e in (eos_ids if eos_ids is not None else constraints.vocab.eos_ids))
        if not self.eos_ids:
            raise DecodeError("no EOS id: pass eos_ids=[...]")
        self._inp = InputConstraints.from_compiled(constraints)
        self._device = device
        self._tables: Tables | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the prompt length and the cached states (before another ``generate`` call)."""
        self._prompt_len: int | None = None
        self._states: dict[tuple[int, ...], tuple[int, tuple[int, ...]]] = {}

    def _ensure(self, device) -> Tables:
        if self._tables is None or self._tables.device != torch.device(device):
            self._tables = Tables([self._inp], vocab_width=self.cc.vocab.width, eos_ids=self.eos_ids, device=device)
            self._start = (self._tables.hard_start(self._inp), tuple(self._tables.light_starts(self._inp)))
        return self._tables

    def _state(self, gen: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
        if gen in self._states:
            return self._states[gen]
        if not gen:
            return self._start
        parent = self._state(gen[:-1])
        if parent is None:
            return None
        tb = self._tables
        t = gen[-1]
        if t in self.eos_ids:  # finished row (padding after EOS): keep the state
            st = parent
        else:
            h = tb.hard_next(torch.tensor([parent[0]], device=tb.device), torch.tensor([t], device=tb.device))
            state = torch.tensor([parent[1]], device=tb.device, dtype=torch.long).view(1, -1)
            s = tb.light_next(state, torch.tensor([t], device=tb.device))
            if int(h) < 0 or bool((s < 0).any()):
                st = None  # the row took a token the constraints do not allow (another processor forced it)
            else:
                st = (int(h), tuple(int(x) for x in s.view(-1).tolist()))
        self._states[gen] = st
        return st

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        tb = self._ensure(scores.device)
        if scores.shape[-1] != tb.V:
            raise DecodeError(f"scores have {scores.shape[-1]} columns but the constraints were compiled for {tb.V} token ids")
        if self._prompt_len is None:
            self._prompt_len = int(input_ids.shape[1])
        R = input_ids.shape[0]
        gens = [tuple(int(x) for x in row[self._prompt_len :].tolist()) for row in input_ids]
        states = [self._state(g) for g in gens]
        if any(s is None for s in states):
            bad = next(i for i, s in enumerate(states) if s is None)
            raise DisallowedTokenError(f"row {bad} of generate() holds a token the constraints do not allow: {gens[bad]}")
        h = torch.tensor([s[0] for s in states], device=tb.device, dtype=torch.long)
        ls = torch.tensor([list(s[1]) for s in states], device=tb.device, dtype=torch.long).view(R, -1)
        allowed = unpack_bits(tb.build_mask(h, ls), tb.V)  # [R, V]
        eos = torch.tensor(self.eos_ids, device=tb.device)
        acc = tb.accepting(h, ls)
        dead = ~allowed.any(-1) & ~acc
        eos_ok = (acc | dead)[:, None] & torch.ones(R, len(self.eos_ids), dtype=torch.bool, device=tb.device)
        allowed = allowed.clone()
        allowed[:, eos] = eos_ok
        return scores.masked_fill(~allowed.to(scores.device), float("-inf"))
