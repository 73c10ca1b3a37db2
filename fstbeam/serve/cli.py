"""``fstbeam serve``: the command line of the server (``fstbeam/cli.py`` registers it)."""
from __future__ import annotations

import argparse
import logging
import os
import sys

__all__ = ["add_serve_parser", "run", "main"]


def _pair(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (an artifact id and a .fstbeam file), got {text!r}")
    return name.strip(), path.strip()


def add_serve_parser(sub) -> argparse.ArgumentParser:
    s = sub.add_parser("serve", help="serve constrained beam search over HTTP (OpenAI-compatible)",
                       description="An OpenAI-compatible HTTP server with constrained beam search, continuous "
                                   "batching and per-request constraints (docs/serve.md).")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    s.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/* (default: "
                                                   "$FSTBEAM_API_KEY if set, else no key)")
    s.add_argument("--model", default=None, metavar="PATH", help="Hugging Face model folder (default: Gemma 3 270M)")
    s.add_argument("--tokenizer", default=None, metavar="PATH", help="tokenizer (default: the model's)")
    s.add_argument("--model-name", default=None, help="the model id clients send (default: fstbeam-default or --model)")
    s.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, or auto (default)")
    s.add_argument("--packed-weights", choices=("auto", "on", "off"), default="auto", help="as for fstbeam generate")
    s.add_argument("--format", default="auto", metavar="raw|chat|auto|qa|TEMPLATE",
                   help="prompt format of completions (and of chat without a chat template), as for fstbeam generate")
    s.add_argument("--stop-at-newline", action="store_true", help="end outputs at a newline (as fstbeam generate)")
    s.add_argument("--length-reward", type=float, default=None, help="as for fstbeam generate (default: its defaults)")
    s.add_argument("--constraints", type=_pair, action="append", default=[], metavar="NAME=PATH",
                   help="store a compiled artifact at start under id NAME (repeatable)")
    s.add_argument("--warm-cefr", action="append", default=[], metavar="LEVEL",
                   help="compile this CEFR level at start, so the first request using it is fast (repeatable)")
    lim = s.add_argument_group("limits")
    lim.add_argument("--batch-size", type=int, default=8, help="requests decoded together per batch (default 8)")
    lim.add_argument("--max-queue", type=int, default=256, help="requests in flight before 429 (default 256)")
    lim.add_argument("--max-body", type=int, default=1 << 20, help="body size limit in bytes (default 1 MiB)")
    lim.add_argument("--timeout", type=float, default=300.0, help="per-request time limit in seconds (default 300)")
    lim.add_argument("--max-tokens", type=int, default=512, help="largest max_tokens a request may ask (default 512)")
    lim.add_argument("--grace", type=float, default=30.0, help="seconds accepted requests get after SIGTERM (default 30)")
    s.add_argument("--quiet", action="store_true", help="no per-request log lines")
    return s


def run(args) -> int:
    from ..errors import Error
    from .config import Limits
    from .server import serve

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    for name in ("fstbeam.serve", "fstbeam.files.default_model"):  # start-up stages, conversion progress, requests
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        limits = Limits(max_queue=args.max_queue, max_body_bytes=args.max_body, timeout_s=args.timeout,
                        max_tokens=args.max_tokens)
        return serve(args.model, tokenizer=args.tokenizer, host=args.host, port=args.port, device=args.device,
                     prompt_format=args.format, packed_weights=args.packed_weights, constraints=dict(args.constraints),
                     warm_cefr=tuple(args.warm_cefr), api_key=args.api_key or os.environ.get("FSTBEAM_API_KEY") or None,
                     model_name=args.model_name, limits=limits, batch_size=args.batch_size,
                     stop_at_newline=args.stop_at_newline, length_reward=args.length_reward, grace_s=args.grace,
                     qa=args.format == "qa", log_requests=not args.quiet)
    except (Error, ValueError, OSError) as exc:
        print(f"fstbeam serve: {exc}", file=sys.stderr)
        return 2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fstbeam.serve")
    sub = p.add_subparsers(dest="command", required=True)
    add_serve_parser(sub)
    try:
        args = p.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        return int(exc.code or 0)
    return run(args)
