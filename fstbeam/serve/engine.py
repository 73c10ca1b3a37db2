"""The decoding side of the server: requests in, results out, with continuous batching.

One :class:`Worker` per distinct search setting (a request's whole `SearchConfig`) runs a
``ContinuousEngine`` in a thread of its own: requests join its batch at the next step when
there is room (they neither wait for the batch to finish nor run one by one), finished ones
leave, and cancelled ones (client gone, timeout, shutdown) leave before the next step. Results
and streamed prefixes go back to the asyncio loop with ``call_soon_threadsafe``. Constraints
compile in one more thread (``compile``), so a slow first compile never blocks the loop or the
decoding.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from .._startup import lower_thread_priority
from ..cancel import CompileCancelled, clear_stop, request_stop
from ..runtime.config import SearchConfig
from ..runtime.search.continuous import ContinuousEngine, RequestSource, Ticket
from .errors import RequestError

__all__ = ["ServeEngine", "Job", "FairLock", "Cancellable", "CompileCancelled"]

log = logging.getLogger("fstbeam.serve")


@dataclass(eq=False)
class Job:
    """One prompt of a request, decoded to ``n`` choices. ``events`` receives ``("prefix",
    tokens)`` (streaming only), then ``("done", GenerationResult)`` or ``("error", RequestError)``."""

    index: int
    loop: asyncio.AbstractEventLoop
    ticket: Ticket
    prompt: object
    phrases: tuple
    prompt_tokens: int
    worker: "Worker"
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    finished: bool = False
    constraints: object = None  # for the decode side's check of a JSON output (runtime/structured_check.py)

    def post(self, kind: str, value) -> None:
        """From any thread: queue an event on the job's loop."""
        self.loop.call_soon_threadsafe(self._post, kind, value)

    def _post(self, kind: str, value) -> None:
        if self.finished:
            return
        if kind != "prefix":
            self.finished = True
            self.worker.forget(self.index)
        self.events.put_nowait((kind, value))

    def cancel(self) -> None:
        """The request leaves its batch (before the next step) and gets no result."""
        if not self.finished:
            self.worker.owner.metrics.cancelled.inc()
        self.ticket.cancelled = True
        self.finished = True
        self.worker.forget(self.index)


class Worker:
    """A decoding thread with one continuous batch (one search setting)."""

    def __init__(self, owner: "ServeEngine", cfg: SearchConfig, eos_ids, heavy: bool = False):
        self.owner, self.cfg, self.heavy = owner, cfg, heavy
        dec = owner.decoder
        self.engine = ContinuousEngine(dec.adapter, cfg, eos_ids=eos_ids, device=dec.device, lock=owner.model_lock)
        self.engine.on_step = self._on_step
        self.source = RequestSource()
        self.jobs: dict[int, Job] = {}
        self.last_used = time.monotonic()
        self.live = 0
        self.alive = True
        self.thread = threading.Thread(target=self._loop, name=f"fstbeam-decode-b{cfg.beam_size}", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> None:
        self.jobs[job.index] = job
        self.last_used = time.monotonic()
        self.source.put(job.ticket)
        if not self.alive:  # the thread ended (its finally fails what it saw): fail what it did not
            job.post("error", RequestError(500, "the decoding thread stopped: retry the request"))

    def forget(self, index: int) -> None:
        self.jobs.pop(index, None)

    @property
    def busy(self) -> int:
        return len(self.jobs)

    def _on_step(self, live: int) -> None:
        self.live = live
        self.owner.metrics.steps.inc()

    def _loop(self) -> None:
        import torch

        dec, metrics = self.owner.decoder, self.owner.metrics
        if self.heavy:  # a batch of many phrase automata: small requests' batches step first
            lower_thread_priority()
        try:
            with torch.inference_mode():
                for raw in self.engine.serve(self.source):
                    job = self.jobs.get(raw.index)
                    if job is None:  # cancelled meanwhile
                        continue
                    # the decoder's own result (a JSON output's satisfied: parses and validates)
                    res = dec.result(raw, job.prompt if isinstance(job.prompt, str) else None, job.phrases, self.cfg,
                                     job.constraints)
                    metrics.finished_tokens(sum(len(h.token_ids) for h in res.hypotheses))
                    if res.error is not None:
                        job.post("error", RequestError(400, res.error, "prompt"))
                    else:
                        job.post("done", res)
        except Exception as exc:  # noqa: BLE001 - a bug must fail this batch's requests, not hang them
            log.exception("decoding thread failed")
            why = f"decoding failed: {type(exc).__name__}: {exc}"
        else:
            why = "the decoding thread stopped: retry the request"
        finally:
            self.alive = False
            self.live = 0
        for job in list(self.jobs.values()):  # never a request left without an answer
            job.post("error", RequestError(500, why))


# ---- compiles that can be stopped part-way ------------------------------------------------------
# A Python thread cannot be killed. ``Cancellable.cancel`` asks the work to stop
# (`fstbeam.cancel.request_stop`); the compiler's checkpoints (each stage, each level of the lift's
# searches, each automaton optimized while a schema is built) raise :class:`CompileCancelled`
# there (a single long call into OpenFst finishes first). The work then unwinds like any failing
# compile (``with`` blocks release their locks, caches are filled only by finished work), and the
# pool thread is free for the next request instead of finishing a result nobody waits for.

T = TypeVar("T")


class Cancellable(Generic[T]):
    """``fn`` as a callable for a pool; :meth:`cancel` stops it at its next checkpoint (or keeps
    it from starting)."""

    def __init__(self, fn: Callable[[], T]):
        self.fn = fn
        self.cancelled = False
        self._lock = threading.Lock()
        self._thread: int | None = None

    def __call__(self) -> T:
        with self._lock:
            if self.cancelled:
                raise CompileCancelled("cancelled before it started")
            self._thread = threading.get_ident()
        try:
            return self.fn()
        finally:
            with self._lock:  # (a stop asked as fn returned must not stop the thread's next work)
                clear_stop(threading.get_ident())
                self._thread = None

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            if self._thread is not None:
                request_stop(self._thread)


#: more phrase and avoid automata than this: the request decodes in a batch of its own (a step over
#: 32 phrase automata takes about 0.4 s on the tiny test model, a one-phrase request's 0.02 s)
HEAVY_LIGHTS = 4


class FairLock:
    """A lock whose waiters get it in the order they asked (a ticket lock)."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._next = 0
        self._serving = 0

    def __enter__(self) -> "FairLock":
        with self._cv:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cv.wait()
        return self

    def __exit__(self, *exc) -> None:
        with self._cv:
            self._serving += 1
            self._cv.notify_all()


class ServeEngine:
    """Submits requests to the worker of their settings; compiles constraints; shuts down."""

    def __init__(self, decoder, config, metrics, store):
        self.decoder, self.config, self.metrics, self.store = decoder, config, metrics, store
        self.workers: dict[tuple[SearchConfig, bool], Worker] = {}
        # one model, several batches: one step at a time, taken in turn (a FIFO lock: a batch of
        # slow steps cannot take the model twice while another batch waits)
        self.model_lock = FairLock()
        self.accepting = True  # False after SIGTERM: new requests get 503 (the guard), accepted ones go on
        self.stopped = False  # True once the grace period is over: whatever is left gets 503
        self._stop: asyncio.Future | None = None  # done when stopped (wakes requests waiting on a compile)
        self._index = itertools.count()
        # compiles and tokenizing, off the event loop, in two lanes: constraints that may compile
        # for long (a word list, a grammar, a schema, many or long phrases) in ``compile_threads``
        # threads; cache hits, small phrase sets and tokenizing in a quick lane of their own, so
        # they never queue behind another client's large compiles (tests/serve/test_fairness.py)
        self._compiler = ThreadPoolExecutor(max_workers=config.limits.compile_threads, thread_name_prefix="fstbeam-compile",
                                            initializer=lower_thread_priority)
        self._quick = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fstbeam-quick")

    # ---- constraints -------------------------------------------------------------------------
    async def compile(self, body):
        """The compiled constraints of a body's ``constraints`` object (in the compile thread)."""
        from .constraints import compile_request

        if body is None:
            return None
        loop = asyncio.get_running_loop()
        key = _key(body)

        def run():
            t0 = time.perf_counter()
            try:
                hit = self.store.cached(key)  # looked up again: another request may have compiled it meanwhile
                cc = compile_request(body, self.store)
            except CompileCancelled:
                log.info("compile stopped after %.2f s: its request ran out of time", time.perf_counter() - t0)
                raise
            if hit is None:
                self.metrics.compile_s.observe(time.perf_counter() - t0)
            return cc

        lane = self._quick if self.store.cached(key) is not None or _small(body) else self._compiler
        task = Cancellable(run)  # stopped part-way when its request gives up on it
        return await self._await(loop.run_in_executor(lane, task), self.config.limits.compile_timeout_s,
                                 "compiling the constraints took longer than this server's compile budget "
                                 f"({self.config.limits.compile_timeout_s:g} s): use fewer or shorter phrases, or store "
                                 "them once with POST /v1/constraints and refer to the artifact", task.cancel)

    async def _await(self, fut, budget: float, too_slow: str, give_up=None):
        """``fut``'s result; 504 after ``budget`` seconds, 503 once the server stops; ``give_up``
        is called then (and when the caller is cancelled: its request's own time limit), to stop
        the work in its thread (`Cancellable`); without it the work finishes there."""
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
            if self.stopped:
                self._stop.set_result(None)
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # an abandoned one's error is not "unretrieved"
        try:
            done, _ = await asyncio.wait({fut, self._stop}, timeout=budget, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if give_up is not None:
                give_up()
            raise
        if fut in done:
            return fut.result()
        if give_up is not None:
            give_up()
        if self._stop in done:
            raise RequestError(503, "the server shut down before this request finished: retry it")
        raise RequestError(504, too_slow, "constraints")

    def warm(self) -> None:
        """Build the vocabulary's phrase index (about 1 s, once per process) in the compile thread,
        so the first request with phrases does not pay for it; the server is ready meanwhile (a
        request that needs it waits in the same thread)."""

        def build():
            from ..compiler.compiler import compiler_for

            t0, c0 = time.perf_counter(), time.process_time()
            try:
                compiler_for(self.store.vocab).index  # noqa: B018 - built and kept in the process's cache
            except Exception:  # noqa: BLE001 - a request that needs it gets the error itself
                log.exception("warming the phrase index failed")
                return
            log.info("start: phrase index %.2f s (cpu %.2f s, after ready)", time.perf_counter() - t0,
                     time.process_time() - c0)

        self._compiler.submit(build)
        threading.Thread(target=_warm_kernels, args=(self.decoder.device,), name="fstbeam-warm-kernels", daemon=True).start()

    async def run_in_compiler(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._compiler, fn, *args)

    # ---- requests ----------------------------------------------------------------------------
    def in_flight(self) -> int:
        return sum(w.busy for w in self.workers.values())

    async def submit(self, prompt, cc, cfg: SearchConfig, *, stream: bool = False) -> Job:
        """Queue one prompt (text, or token ids from a chat template; tokenized in the compile
        pool, off the event loop); 429 when the queue is full, 503 once the server stopped, 400
        for a prompt the model cannot take."""
        if self.stopped:
            raise RequestError(503, "the server shut down before this request finished: retry it")
        if self.in_flight() >= self.config.limits.max_queue:
            raise RequestError(429, f"too many requests in flight (limit {self.config.limits.max_queue}): retry later")
        if cfg.stop_at == "auto" and cfg.eos_ids is None:  # as Decoder.stream: a cue-line prompt ends at its line
            cfg = dataclasses.replace(cfg, stop_at="line" if self.decoder.ends_at_line(prompt) else "eos")
        inp = self.decoder.input_constraints(cc, allow_control_tokens=cfg.allow_control_tokens)
        # stop strings ride on the request (not the batch's setting): requests that differ only in
        # them share a batch; requests with many phrase automata (whose steps cost many times a
        # small one's) decode in a batch of their own, so a small request never waits on their steps
        worker = self._worker(dataclasses.replace(cfg, stop=()), len(inp.lights) > HEAVY_LIGHTS)
        index = next(self._index)
        loop = asyncio.get_running_loop()
        req = await self._await(loop.run_in_executor(self._quick, lambda: self.decoder.request(
            index, prompt, inp, cfg.max_new_tokens, want_query=cfg.length_ratio is not None, stop=cfg.stop)),
            self.config.limits.timeout_s, "tokenizing the prompt took longer than the time limit")
        if req.error is not None:
            raise RequestError(400, req.error, "prompt")
        if self.stopped:
            raise RequestError(503, "the server shut down before this request finished: retry it")
        job = Job(index, loop, Ticket(req), prompt, inp.phrase_texts, len(req.ids), worker, constraints=cc)
        if stream:
            job.ticket.on_prefix = lambda tokens: job.post("prefix", tokens)
        worker.submit(job)
        self.update_gauges()
        return job

    def _worker(self, cfg: SearchConfig, heavy: bool = False) -> Worker:
        """The batch of ``cfg`` (of requests with many phrase automata when ``heavy``); at most
        ``max_engines`` settings of each kind decode at once."""
        w = self.workers.get((cfg, heavy))
        if w is not None and w.alive and not w.source.closed:
            return w
        same = [x for k, x in self.workers.items() if k[1] == heavy]
        if len(same) >= self.config.max_engines:
            idle = sorted((x for x in same if not x.busy), key=lambda x: x.last_used)
            if not idle:
                raise RequestError(429, f"{len(self.workers)} different search settings (beam_size, max_tokens, n, "
                                        "...) are decoding: retry later, or use the settings of the running requests")
            victim = idle[0]
            victim.source.close()
            self.workers = {k: v for k, v in self.workers.items() if v is not victim}
        w = self.workers[(cfg, heavy)] = Worker(self, cfg, self.decoder.stop_ids(cfg), heavy)
        return w

    def update_gauges(self) -> None:
        m = self.metrics
        m.queue.set(sum(len(w.source) for w in self.workers.values()))
        m.in_flight.set(self.in_flight())
        m.occupancy.set(sum(len(getattr(w.engine, "slots", ())) / w.cfg.batch_size for w in self.workers.values() if w.alive))

    # ---- shutdown ----------------------------------------------------------------------------
    def drain(self) -> None:
        """Stop accepting new requests; accepted ones (compiling, queued or live) go on."""
        self.accepting = False

    def fail_remaining(self, why: str) -> int:
        """The grace period is over: every unfinished request gets 503 (they leave their
        batches; those waiting on a compile or tokenizing are woken)."""
        self.stopped = True
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(None)
        n = 0
        for w in self.workers.values():
            for job in list(w.jobs.values()):
                job.ticket.cancelled = True
                job.post("error", RequestError(503, why))
                n += 1
        return n

    async def close(self, grace: float) -> None:
        """Drain, wait up to ``grace`` seconds for the accepted requests, fail the rest, stop."""
        self.drain()
        deadline = time.monotonic() + grace
        while self.in_flight() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.in_flight():
            log.warning("shutdown: %d requests unfinished after %.0f s: answered with 503", self.fail_remaining(
                "the server shut down before this request finished: retry it"), grace)
            await asyncio.sleep(0.05)
        self.stopped = True
        for w in self.workers.values():
            w.source.close()
        for w in self.workers.values():
            w.thread.join(timeout=5)
        self._compiler.shutdown(wait=False, cancel_futures=True)
        self._quick.shutdown(wait=False, cancel_futures=True)


def _warm_kernels(device) -> None:
    """Load the masked top-k kernel of this device once (on CPU: numba and its cached machine
    code, ~0.5 s), so the first decoding step does not."""
    import torch

    from ..kernels import masked_topk

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with torch.inference_mode():
            masked_topk(torch.zeros(2, 64, device=device), torch.full((1, 2), -1, dtype=torch.int32, device=device),
                        torch.zeros(2, dtype=torch.int64, device=device), torch.zeros(2, device=device), 2)
    except Exception:  # noqa: BLE001 - the first step reports its own error
        log.exception("warming the decoding kernels failed")
        return
    log.info("start: kernels %.2f s (cpu %.2f s, after ready)", time.perf_counter() - t0, time.process_time() - c0)


#: a constraints object this small, with no hard part of its own, compiles in milliseconds
#: (phrases over a stored or no base): the quick lane
_QUICK_CHARS = 400
_HARD_KEYS = ("words", "cefr", "grammar", "grammar_params", "json_schema", "regex", "choice")


def _small(body) -> bool:
    if not isinstance(body, dict) or any(body.get(k) is not None for k in _HARD_KEYS):
        return False
    try:
        return len(_key(body)) <= _QUICK_CHARS
    except Exception:  # noqa: BLE001 - a malformed body: its compile reports it, in either lane
        return False


def _key(body) -> str:
    from .constraints import canonical_key

    return canonical_key(body)
