"""Yang et al.'s (2020) VAR-STREAM schedule for :class:`~.search.SearchEngine`
(``expand="least_advanced"``): only the inputs with the fewest output tokens are expanded; the
others are *parked* (their beams, the logits their live rows wait to expand and their model cache
rows set aside) until the newcomers catch up, then rejoin the batch."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .beam import BeamState

__all__ = ["LeastAdvancedSchedule", "Parked"]


@dataclass
class Parked:
    """Inputs set aside by the least-advanced schedule: their slots, beams, the logits their live
    rows wait to expand, and their model state (cache rows)."""

    slots: list
    beam: BeamState
    logits: torch.Tensor
    state: object


class LeastAdvancedSchedule:
    """Parking and rejoining for :class:`~.search.SearchEngine` (it holds ``slots``, ``beam``,
    ``logits``, ``state``, ``parked``, ``adapter``, ``device`` and ``_join``)."""

    def _schedule(self) -> None:
        """Yang et al.'s VAR-STREAM: expand only the inputs with the fewest output tokens. Parked
        inputs rejoin when the others have caught up with them (or have all finished)."""
        if self.parked is not None and (
                not self.slots or min(sl.steps for sl in self.slots) >= min(sl.steps for sl in self.parked.slots)):
            self._unpark()
        if len(self.slots) > 1:
            least = min(sl.steps for sl in self.slots)
            ahead = [sl.steps > least for sl in self.slots]
            if any(ahead):
                self._park(ahead)

    def _rows_of(self, which: torch.Tensor) -> torch.Tensor:
        """Model rows of the slots in bool ``which`` [n] (rows are the live beam entries in order)."""
        alive = self.beam.alive
        flat = alive.reshape(-1)
        row_id = torch.cumsum(flat, 0) - 1
        return row_id[flat & which[:, None].expand_as(alive).reshape(-1)]

    def _park(self, flags: list[bool]) -> None:
        """Move the slots flagged in ``flags`` out of the batch (into ``self.parked``)."""
        dev = self.device
        which = torch.tensor(flags, dtype=torch.bool, device=dev)
        rows_out, rows_in = self._rows_of(which), self._rows_of(~which)
        out_i = torch.tensor([i for i, f in enumerate(flags) if f], dtype=torch.long, device=dev)
        in_i = torch.tensor([i for i, f in enumerate(flags) if not f], dtype=torch.long, device=dev)
        group = Parked([sl for sl, f in zip(self.slots, flags) if f], self.beam.select(out_i),
                        self.logits.index_select(0, rows_out), self.adapter.take(self.state, rows_out))
        self.beam = self.beam.select(in_i)
        self.slots = [sl for sl, f in zip(self.slots, flags) if not f]
        self.logits = self.logits.index_select(0, rows_in)
        self.state = self.adapter.select(self.state, rows_in)
        if self.parked is not None:  # one parked group: merge
            old = self.parked
            group = Parked(old.slots + group.slots, old.beam.cat(group.beam), torch.cat([old.logits, group.logits]),
                            self.adapter.concat([old.state, group.state]))
        self.parked = group

    def _unpark(self) -> None:
        """Parked slots rejoin the batch (after the live ones)."""
        group, self.parked = self.parked, None
        if group is None:
            return
        self.beam = self.beam.cat(group.beam)
        self.slots = self.slots + group.slots
        self._join(group.logits, group.state)
