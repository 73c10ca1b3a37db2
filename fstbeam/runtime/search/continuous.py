"""Continuous batching for a server: :class:`ContinuousEngine` decodes requests as they arrive.

:meth:`SearchEngine.run` already streams (Yang et al. 2020): at each refill it pulls new inputs
from an iterator, and a finished input leaves the batch. A server needs three things more, added
here without touching the search itself:

- **"Nothing now."** An iterator can only give an input or end. A :class:`RequestSource` is a
  thread-safe queue: while inputs are live, an empty queue means "nothing now" and the search
  steps on; with nothing live the engine blocks on it (a short wait, repeated) until a request
  arrives or the source is closed, which ends :meth:`SearchEngine.run` once the batch is empty.
- **Leaving.** A cancelled request (its client disconnected, or it timed out) leaves the batch
  before the next step: its slot, beam, pending logits and model rows are dropped, as when the
  least-advanced schedule parks inputs (:meth:`~.schedule.LeastAdvancedSchedule._park`), and nothing is returned for it.
- **Watching.** After each step a request may be told the output tokens that every hypothesis it
  could still return already shares (the live beam, its finished n-best pool and its best
  partial output): a prefix that no later step can change (streaming, ``fstbeam serve``).

Every input's search is independent of the others in the batch (``search.py``), so a request
decodes to the same output as offline; the server sets ``refill`` so that a request joins at the
next step whenever the batch has room.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from .beam import STOP_EOS
from .engine import RawResult, Request, SearchEngine

__all__ = ["ContinuousEngine", "RequestSource", "Ticket", "shared_prefix"]


@dataclass
class Ticket:
    """A queued or live request: ``cancelled`` makes it leave; ``on_prefix(tokens)`` (optional)
    is called from the decoding thread with the shared output prefix when it grows."""

    request: Request
    on_prefix: Callable[[list[int]], None] | None = None
    cancelled: bool = False
    shared: int = 0  # length of the prefix reported so far


class RequestSource:
    """The pending requests of one engine, fed by other threads (``put``), drained by the
    decoding thread. Iterating it is what :meth:`SearchEngine.run` expects of its input."""

    def __init__(self, idle_wait: float = 0.1):
        self._queue: collections.deque[Ticket] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.idle_wait = idle_wait
        self.tickets: dict[int, Ticket] = {}  # queued or live, by request index

    def put(self, ticket: Ticket) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the request source is closed")
            self.tickets[ticket.request.index] = ticket
            self._queue.append(ticket)
            self._cond.notify()

    def close(self) -> None:
        """No more requests: the engine finishes the live ones and returns."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> "RequestSource":
        return self

    def __next__(self) -> Request:
        """Blocking iteration (the plain :meth:`SearchEngine._take`): the next request, until closed."""
        while True:
            t = self.poll(block=True)
            if t is False:
                raise StopIteration
            if t is not None:
                return t.request

    def poll(self, block: bool) -> Ticket | None | bool:
        """The next uncancelled ticket; ``None``: nothing now; ``False``: closed and drained."""
        with self._cond:
            if block and not self._queue and not self._closed:
                self._cond.wait(self.idle_wait)
            while self._queue:
                t = self._queue.popleft()
                if not t.cancelled:
                    return t
                self.tickets.pop(t.request.index, None)
            return False if self._closed else None

    def done(self, index: int) -> None:
        self.tickets.pop(index, None)


class ContinuousEngine(SearchEngine):
    """A :class:`SearchEngine` over a :class:`RequestSource` (see the module docstring).
    ``on_step(live)``, when set, is called before each step with the number of live requests."""

    on_step: Callable[[int], None] | None = None

    def __init__(self, adapter, config, *, eos_ids, device, lock: contextlib.AbstractContextManager | None = None):
        # Several engines (one per search setting) may share one model: the model calls and the
        # search step take ``lock`` (the adapter routes packed weights by patching the model's
        # layers, and the output head reuses one logits buffer).
        self._lock = lock
        super().__init__(_Locked(adapter, lock) if lock is not None else adapter, config, eos_ids=eos_ids, device=device)

    def serve(self, source: RequestSource) -> Iterator[RawResult]:
        """Decode ``source``'s requests until it is closed and the batch is empty."""
        self._source = source
        for raw in self.run(source):
            source.done(raw.index)
            yield raw

    def _live(self) -> int:
        return len(self.slots) + (len(self.parked.slots) if self.parked else 0)

    def _take(self, pending, room: int, batch: list) -> Iterator[RawResult]:  # type: ignore[override]
        """Like :meth:`SearchEngine._take`, but an empty queue is "nothing now" while inputs are
        live (and a short blocking wait while none are); returns True once the source is closed."""
        while len(batch) < room:
            t = pending.poll(block=not batch and self._live() == 0)
            if t is False:
                return True
            if t is None:
                return False
            req = t.request
            if req.error is not None:
                pending.done(req.index)
                yield RawResult(req.index, [], 0, [], req.error)
                continue
            batch.append(req)
        return False

    def _expand(self, model_out: torch.Tensor) -> list[int]:
        self._drop_cancelled()
        if self.on_step is not None:
            self.on_step(len(self.slots))
        if not self.slots:
            return []
        with self._lock or contextlib.nullcontext():
            done = super()._expand(self.logits)
        self._report_prefixes(set(done))
        return done

    def _drop_cancelled(self) -> None:
        """Cancelled slots leave the batch: slots, beams, pending logits and model rows."""
        tickets = self._source.tickets
        keep = [sl.req.index in tickets and not tickets[sl.req.index].cancelled for sl in self.slots]
        if all(keep):
            return
        for sl, k in zip(self.slots, keep):
            if not k:
                self._source.done(sl.req.index)
        dev = self.device
        which = torch.tensor(keep, dtype=torch.bool, device=dev)
        rows_in = self._rows_of(which)
        self.beam = self.beam.select(torch.nonzero(which).squeeze(1))
        self.slots = [sl for sl, k in zip(self.slots, keep) if k]
        if self.slots:
            self.logits = self.logits.index_select(0, rows_in)
            self.state = self.adapter.select(self.state, rows_in)

    def _report_prefixes(self, done: set[int]) -> None:
        tickets = self._source.tickets
        watched = [(i, tickets[sl.req.index]) for i, sl in enumerate(self.slots)
                   if i not in done and sl.req.index in tickets and tickets[sl.req.index].on_prefix is not None]
        if not watched:
            return
        b = self.beam
        idx = torch.tensor([i for i, _ in watched], dtype=torch.long, device=self.device)
        sub = b.select(idx)
        host = [t.tolist() for t in (sub.alive, sub.hist, sub.length, sub.fin_rank, sub.fin_len, sub.fin_eos,
                                     sub.fin_hist, sub.part_logp, sub.part_len, sub.part_hist)]
        for j, (_, ticket) in enumerate(watched):
            prefix = shared_prefix(*(h[j] for h in host))
            if len(prefix) > ticket.shared:
                ticket.shared = len(prefix)
                ticket.on_prefix(prefix)


class _Locked:
    """A model adapter whose model calls hold a lock (see :class:`ContinuousEngine`)."""

    def __init__(self, adapter, lock):
        self._adapter, self._lock = adapter, lock

    def __getattr__(self, name):
        return getattr(self._adapter, name)

    def prefill(self, *args, **kwargs):
        with self._lock:
            return self._adapter.prefill(*args, **kwargs)

    def step(self, *args, **kwargs):
        with self._lock:
            return self._adapter.step(*args, **kwargs)


def shared_prefix(alive, hist, length, fin_rank, fin_len, fin_eos, fin_hist, part_logp, part_len, part_hist) -> list[int]:
    """The tokens every output one slot may still return begins with (host lists of one slot):
    its live hypotheses (every later one descends from them), its finished n-best and its best
    partial output (either may be what it returns)."""
    seqs = [h[:length] for a, h in zip(alive, hist) if a]
    for r, n, e, h in zip(fin_rank, fin_len, fin_eos, fin_hist):
        if r != float("-inf"):
            seqs.append(h[: n - (1 if e >= 0 or e == STOP_EOS else 0)])  # (a stop string spanning tokens: the
            # text stream holds back what may begin one, serve/streaming.py)
    if part_logp != float("-inf"):
        seqs.append(part_hist[:part_len])
    if not seqs:
        return []
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return list(first[:n])
