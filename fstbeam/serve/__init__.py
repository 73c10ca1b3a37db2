"""``fstbeam serve``: an OpenAI-compatible HTTP server with constrained beam search (docs/serve.md).

    fstbeam serve --warm-cefr A1 --format qa            # or, from Python:
    fstbeam.serve(prompt_format="qa", port=8000)

Modules, one job each: :mod:`.app` (routes), :mod:`.guard` (what every request and connection
passes first: connection limits and header timeouts, key, body size and timeout, JSON checks, log
line), :mod:`.schemas` (request bodies), :mod:`.options` (a request's
SearchConfig; the OpenAI fields refused), :mod:`.constraints` (the body's constraints object ->
compiled constraints), :mod:`.artifacts` (stored artifacts and caches), :mod:`.engine` (decoding
threads with continuous batching, the compile pool), :mod:`.streaming` (the shared prefix as text
deltas), :mod:`.responses` (OpenAI-shaped answers, logprobs), :mod:`.metrics`
(Prometheus), :mod:`.config` (limits), :mod:`.server` (start-up and shutdown). The command line is
``fstbeam.cli.serve``.
"""
from __future__ import annotations

__all__ = ["serve"]


def serve(*args, **kwargs) -> int:
    """Run the server (see :func:`fstbeam.serve.server.serve`)."""
    from .server import serve as _serve

    return _serve(*args, **kwargs)


class _Module(__import__("types").ModuleType):
    """``fstbeam.serve`` is this package once a submodule is imported (``import fstbeam.serve.app``
    binds it on ``fstbeam``): calling it still runs the server."""

    def __call__(self, *args, **kwargs) -> int:
        return serve(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _Module
