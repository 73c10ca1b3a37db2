"""The server's Prometheus metrics (``GET /metrics``), in a registry of its own (one per app, so
several servers, or tests, in one process do not clash)."""
from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.requests = Counter("fstbeam_requests", "HTTP requests answered", ["route", "status"], registry=r)
        self.queue = Gauge("fstbeam_queue_length", "requests accepted and waiting to join a batch", registry=r)
        self.in_flight = Gauge("fstbeam_requests_in_flight", "requests accepted and not yet answered", registry=r)
        self.occupancy = Gauge("fstbeam_batch_occupancy", "live requests / batch size, summed over the batches", registry=r)
        self.cancelled = Counter("fstbeam_requests_cancelled", "requests that left their batch unfinished (client "
                                 "gone, timeout)", registry=r)
        self.tokens = Counter("fstbeam_generated_tokens", "output tokens of finished requests", registry=r)
        self.tokens_per_s = Gauge("fstbeam_tokens_per_second", "output tokens per second over the last 10 s", registry=r)
        self.steps = Counter("fstbeam_search_steps", "beam search steps (one model call each)", registry=r)
        self.compile_s = Histogram("fstbeam_compile_seconds", "compile time of a request's constraints (cache misses)",
                                   buckets=(0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60), registry=r)
        self.latency_s = Histogram("fstbeam_request_seconds", "time from accepting a request to its answer",
                                   buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300), registry=r)
        self._lock = threading.Lock()
        self._window: list[tuple[float, int]] = []

    def finished_tokens(self, n: int) -> None:
        self.tokens.inc(n)
        now = time.monotonic()
        with self._lock:
            self._window.append((now, n))
            self._window = [(t, k) for t, k in self._window if now - t <= 10.0]
            self.tokens_per_s.set(sum(k for _, k in self._window) / 10.0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
