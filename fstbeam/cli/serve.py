"""``fstbeam serve``: the command line of the server (``fstbeam.cli.main`` dispatches to it).

    fstbeam serve --format qa --port 8000 --constraints a1=a1.fstbeam

The search flags and ``--preset`` are those of ``fstbeam generate`` (built from `SearchConfig`
by ``add_search_flags``): they set the defaults of every request, which a request may override
field by field. Parsing imports nothing of the server; the flags are checked before the model
loads (exit 2), and the port is taken before it too.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .flags import add_packed_weights_flag, add_preset_flag, add_search_flags, format_arg, nonempty, search_overrides

__all__ = ["add_arguments", "run", "main"]


def _pair(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (an artifact id and a .fstbeam file), got {text!r}")
    return name.strip(), path.strip()


def _int_in(low: int, high: int | None = None):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"must be in {low}..{high} (got {v})" if high is not None
                                             else f"must be at least {low} (got {v})")
        return v
    return parse


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (got {text})")
    return v


def add_arguments(s: argparse.ArgumentParser) -> None:
    """The flags of ``fstbeam serve``."""
    s.add_argument("--host", type=nonempty, default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=_int_in(0, 65535), default=8000, help="port (default 8000; 0 = any free port)")
    s.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/* (default: "
                                                   "$FSTBEAM_API_KEY if set, else no key)")
    s.add_argument("--model-name", type=nonempty, default=None,
                   help="the model id clients send (default: fstbeam-default or --model)")
    s.add_argument("--constraints", type=_pair, action="append", default=[], metavar="NAME=PATH",
                   help="store a compiled artifact at start under id NAME (repeatable)")
    s.add_argument("--warm-cefr", type=nonempty, action="append", default=[], metavar="LEVEL",
                   help="compile this CEFR level at start, so the first request using it is fast (repeatable)")
    m = s.add_argument_group("model")
    m.add_argument("--model", type=nonempty, default=None, metavar="PATH", help="Hugging Face model folder (default: Gemma 3 270M)")
    m.add_argument("--tokenizer", type=nonempty, default=None, metavar="PATH", help="tokenizer (default: the model's)")
    m.add_argument("--device", type=nonempty, default="auto", help="cpu, cuda, cuda:1, or auto (default)")
    add_packed_weights_flag(m)
    m.add_argument("--format", type=format_arg, default="auto", metavar="raw|chat|auto|qa|TEMPLATE",
                   help="prompt format of completions (and of chat without a chat template), as for fstbeam generate")
    g = s.add_argument_group("search defaults of requests (the flags of fstbeam generate; a request may set each "
                             "by the field's name, e.g. beam_size, max_new_tokens or max_tokens, length_reward)")
    add_preset_flag(g)
    add_search_flags(g)
    lim = s.add_argument_group("limits")
    lim.add_argument("--max-queue", type=_int_in(1), default=256, help="requests in flight before 429 (default 256)")
    lim.add_argument("--max-body", type=_int_in(1), default=1 << 20, help="body size limit in bytes (default 1 MiB)")
    lim.add_argument("--timeout", type=_seconds, default=300.0, help="per-request time limit in seconds (default 300)")
    lim.add_argument("--max-tokens", type=_int_in(1), default=512,
                     help="largest max_tokens (max_new_tokens) a request may ask (default 512)")
    lim.add_argument("--grace", type=_seconds, default=30.0, help="seconds accepted requests get after SIGTERM (default 30)")
    lim.add_argument("--compile-timeout", type=_seconds, default=30.0,
                     help="a request whose constraints take longer to compile gets 504 (default 30 s)")
    lim.add_argument("--compile-threads", type=_int_in(1), default=2,
                     help="threads that compile large constraints (default 2; small ones, cache hits and "
                          "tokenizing have a quick lane of their own)")
    lim.add_argument("--max-artifacts", type=_int_in(1), default=256,
                     help="POSTed artifacts kept, least recently used dropped first (default 256)")
    lim.add_argument("--header-timeout", type=_seconds, default=10.0,
                     help="a request's headers must arrive within this many seconds (default 10)")
    lim.add_argument("--body-timeout", type=_seconds, default=30.0,
                     help="a request's body must arrive within this many seconds (default 30)")
    lim.add_argument("--idle-timeout", type=_seconds, default=5.0,
                     help="an idle keep-alive connection closes after this many seconds (default 5)")
    lim.add_argument("--max-connections", type=_int_in(1), default=1024,
                     help="open connections in all; more get 503 (default 1024)")
    lim.add_argument("--max-connections-per-client", type=_int_in(1), default=128,
                     help="open connections from one client address; more get 429 (default 128)")
    s.add_argument("--quiet", action="store_true", help="no per-request log lines")


def check(args) -> str | None:
    """Usage errors, before anything slow (exit 2)."""
    from .usage import check_search

    problem = check_search(args)
    if problem:
        return problem
    if args.max_new_tokens is not None and args.max_new_tokens > args.max_tokens:
        return (f"--max-new-tokens {args.max_new_tokens} (the requests' default) is over --max-tokens "
                f"{args.max_tokens} (their limit): lower it or raise --max-tokens")
    for name, path in args.constraints:
        if not os.path.isfile(path):
            return (f"--constraints {name}={path}: no artifact at {path!r}: compile one with "
                    f"`compile-constraints compile ... -o {path}`")
    return None


def run(args, *, process: bool = False) -> int:
    """``fstbeam serve`` with parsed flags: serves until SIGTERM/Ctrl-C, then 0."""
    from ..errors import Error

    problem = check(args)
    if problem:
        print(f"fstbeam serve: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    for name in ("fstbeam.serve", "fstbeam.files.default_model"):  # start-up stages, conversion progress, requests
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        from ..serve.config import Limits
        from ..serve.server import serve

        limits = Limits(max_queue=args.max_queue, max_body_bytes=args.max_body, timeout_s=args.timeout,
                        max_tokens=args.max_tokens, compile_timeout_s=args.compile_timeout,
                        compile_threads=args.compile_threads, max_artifacts=args.max_artifacts,
                        header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout,
                        idle_timeout_s=args.idle_timeout, max_connections=args.max_connections,
                        max_connections_per_client=args.max_connections_per_client)
        code = serve(args.model, tokenizer=args.tokenizer, host=args.host, port=args.port, device=args.device,
                     prompt_format=args.format, packed_weights=args.packed_weights, constraints=dict(args.constraints),
                     warm_cefr=tuple(args.warm_cefr), api_key=args.api_key or os.environ.get("FSTBEAM_API_KEY") or None,
                     model_name=args.model_name, limits=limits, preset=args.preset, grace_s=args.grace,
                     log_requests=not args.quiet, **search_overrides(args))
    except (Error, ValueError, OSError) as exc:
        print(f"fstbeam serve: {exc}", file=sys.stderr)
        return 2
    if process:  # every request is answered: a compile thread still busy does not hold the exit
        from .process_exit import end_server_process

        end_server_process(code, logging.getLogger("fstbeam.serve"))
    return code


def main(argv=None) -> int:
    """``python -m fstbeam.serve [options]``: the same as ``fstbeam serve [options]`` (the whole
    process: it ends the process once every request is answered)."""
    p = argparse.ArgumentParser(prog="python -m fstbeam.serve",
                                description="An OpenAI-compatible HTTP server with constrained beam search (docs/serve.md).")
    add_arguments(p)
    try:
        args = p.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    args.command = "serve"
    return run(args, process=True)
