"""Starting a server: :func:`serve` loads the model once, builds the app and runs uvicorn until
SIGTERM / SIGINT (then drains: accepted requests finish, or get 503 after ``grace_s``).

Start-up stages are timed and logged (``fstbeam.serve`` logger); a stage over 2 s is announced
when it begins, so a first start (the default model's one-time conversion) shows progress.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field

from .config import Limits, ServeConfig

__all__ = ["serve", "build_state", "ServerState"]

log = logging.getLogger("fstbeam.serve")


@dataclass
class ServerState:
    config: ServeConfig
    decoder: object
    engine: object
    store: object
    metrics: object
    started: int = field(default_factory=lambda: int(time.time()))
    stages: dict = field(default_factory=dict)
    http_in_flight: int = 0  # POST requests accepted and not yet answered (the guard counts them)


@contextlib.contextmanager
def stage(name: str, stages: dict, slow_hint: bool = False):
    """Time one start-up stage; say when a slow one starts (after 2 s without a result)."""
    t0, c0 = time.perf_counter(), time.process_time()
    timer = threading.Timer(0 if slow_hint else 2.0, lambda: log.info("start: %s ...", name))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        stages[name] = round(time.perf_counter() - t0, 3)
        log.info("start: %s %.2f s (cpu %.2f s)", name, stages[name], time.process_time() - c0)


def build_state(config: ServeConfig, *, model=None, tokenizer=None, device="auto", prompt_format="auto",
                packed_weights="auto", constraints: dict | None = None, warm_cefr=(), decoder=None) -> ServerState:
    """Load the model (or use ``decoder``), the stored artifacts and the caches."""
    from .metrics import Metrics

    stages: dict = {}
    if decoder is None:
        with stage("import", stages):
            from ..runtime.decoder import Decoder
        with stage("model", stages):  # the format by name (qa, ...): the decoder's preset follows it, as generate's
            decoder = Decoder(model, tokenizer, device=device, prompt_format=prompt_format, packed_weights=packed_weights)
    with stage("vocabulary", stages):
        vocab = decoder.vocab
    from .artifacts import ArtifactStore
    from .engine import ServeEngine

    store = ArtifactStore(vocab, continues_text=decoder.continues_text, limits=config.limits)
    for name, path in (constraints or {}).items():
        with stage(f"artifact {name}", stages):
            store.load(name, path, decoder.tokenizer if decoder.tokenizer is not None else vocab)
    for level in warm_cefr:
        from .constraints import compile_request

        with stage(f"cefr {level}", stages):
            compile_request({"cefr": level}, store)
    metrics = Metrics()
    engine = ServeEngine(decoder, config, metrics, store)
    return ServerState(config, decoder, engine, store, metrics, stages=stages)


def serve(model=None, *, tokenizer=None, host: str = "127.0.0.1", port: int = 8000, device="auto", prompt_format="auto",
          packed_weights="auto", constraints: dict | None = None, warm_cefr=(), api_key: str | None = None,
          model_name: str | None = None, limits: Limits | None = None, decoder=None, ready=None, preset=None,
          **options) -> int:
    """Run ``fstbeam serve`` in this process until SIGTERM/SIGINT; returns 0 after a clean stop.

    ``model``/``tokenizer``/``device``/``prompt_format``/``packed_weights`` as for
    :class:`fstbeam.Decoder` (or pass a ready ``decoder``); ``constraints``: ``{name: path}`` of
    artifacts to store at start; ``warm_cefr``: CEFR levels to compile at start; ``preset`` and
    any `SearchConfig` field (``beam_size=5``, ``stop_at="line"``, ``batch_size=8``, ...): the
    search defaults of requests, as for ``fstbeam generate`` (``stop_at_newline=True`` is
    ``stop_at="line"``); ``options``: other :class:`ServeConfig` fields (``grace_s``, ...);
    ``ready(url)`` is called once the server listens. The port is taken before the model loads,
    so a port in use is an error at once.
    """
    from .._startup import no_gc
    from .options import SEARCH_FIELDS

    t0 = time.perf_counter()
    name = model_name or (str(model) if model is not None and isinstance(model, str) else "fstbeam-default")
    search = {k: options.pop(k) for k in list(options) if k in SEARCH_FIELDS}
    if options.pop("stop_at_newline", False):
        search.setdefault("stop_at", "line")
    if options.pop("qa", False) and preset is None:  # older keyword: the answer preset
        preset = "answer"
    config = ServeConfig(host=host, port=port, api_key=api_key, model_name=name, limits=limits or Limits(),
                         preset=preset, search=search, **options)
    sock = bind(config.host, config.port)
    try:
        with no_gc():  # start-up makes ~600k long-lived objects and no garbage (fstbeam/_startup.py)
            state = build_state(config, model=model, tokenizer=tokenizer, device=device, prompt_format=prompt_format,
                                packed_weights=packed_weights, constraints=constraints, warm_cefr=warm_cefr,
                                decoder=decoder)
            with stage("server", state.stages):
                from .app import create_app

                app = create_app(state)
                import uvicorn  # noqa: F401 - timed here, used by _run
        return _run(app, state, t0, ready, sock)
    finally:
        sock.close()


def bind(host: str, port: int):
    """A listening socket on ``host:port``, or an OSError that says the port is taken and what to do."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may reuse a port in TIME_WAIT
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        why = "is in use (another server?)" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
        raise OSError(f"port {port} on {host} {why}: stop the other server or give another --port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _run(app, state: ServerState, t0: float, ready, sock) -> int:
    import uvicorn

    cfg = state.config
    from .guard import ConnectionLimits, protocol_for

    lim = cfg.limits
    ucfg = uvicorn.Config(app, host=cfg.host, port=cfg.port, log_level="warning", access_log=False, lifespan="on",
                          timeout_graceful_shutdown=int(cfg.grace_s) + 10, http=protocol_for(ConnectionLimits(lim)),
                          timeout_keep_alive=max(1, round(lim.idle_timeout_s)), h11_max_incomplete_event_size=32 << 10)

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            self._fstbeam_loop = asyncio.get_running_loop()
            if self.started:
                port = self.servers[0].sockets[0].getsockname()[1] if self.servers else cfg.port
                url = f"http://{cfg.host}:{port}"
                state.stages["ready"] = round(time.perf_counter() - t0, 3)
                log.info("ready on %s in %.2f s (%s)", url, state.stages["ready"],
                         ", ".join(f"{k} {v:.2f} s" for k, v in state.stages.items() if k != "ready"))
                print(f"fstbeam serve: ready on {url}", file=sys.stderr, flush=True)
                state.engine.warm()  # the phrase index, in the compile thread, after ready
                if ready is not None:
                    ready(url)

        def handle_exit(self, sig, frame):
            loop = getattr(self, "_fstbeam_loop", None)
            if self.should_exit:  # a second signal: leave now, whatever is unanswered
                log.warning("signal %s again: exiting at once (%d requests unanswered)", sig, state.http_in_flight)
                logging.shutdown()
                os._exit(1)
            if loop is not None:
                log.info("signal %s: draining (%d requests in flight, up to %.0f s)", sig,
                         max(state.http_in_flight, state.engine.in_flight()), cfg.grace_s)
                loop.call_soon_threadsafe(state.engine.drain)
                loop.call_soon_threadsafe(loop.call_later, cfg.grace_s, state.engine.fail_remaining,
                                          "the server shut down before this request finished: retry it")
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after its shutdown (the process then dies of it); a
            # drained shutdown is a clean exit instead (status 0)
            getattr(self, "_captured_signals", []).clear()

    server = Server(ucfg)
    server.run(sockets=[sock])
    return 0 if server.started else 1
