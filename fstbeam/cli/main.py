"""The ``fstbeam`` command: parses the subcommand's flags and hands them to its module.

    fstbeam generate --cefr A1 --format qa "What do you eat for breakfast?"
    fstbeam batch --input prompts.jsonl --output out/ --format qa
    fstbeam serve --format qa --port 8000

Each subcommand lives in a module of its own (``fstbeam.cli.generate``, ``.batch``, ``.serve``)
with two functions: ``add_arguments(parser)`` and ``run(args, process=False) -> int`` (the exit
status; ``run`` checks its own flags first). Only the module of the command being run is
imported: parsing ``generate`` loads nothing of the server, and ``fstbeam --help`` none of them.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

__all__ = ["COMMANDS", "build_parser", "main", "command"]

#: name -> (module, one-line help, description)
COMMANDS = {
    "generate": ("fstbeam.cli.generate", "generate text for prompts under constraints", None),
    "batch": ("fstbeam.cli.batch", "decode a .jsonl/.parquet file of prompts into resumable sharded output",
              "Decode every row of a file (columns: prompt, optional id, phrases, avoid, prefix) into JSONL shards "
              "named by row range. Rerun the same command to resume."),
    "serve": ("fstbeam.cli.serve", "serve constrained beam search over HTTP (OpenAI-compatible)",
              "An OpenAI-compatible HTTP server with constrained beam search, continuous batching and per-request "
              "constraints (docs/serve.md)."),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name][0])


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand's flags, or (``only``) those of one subcommand: the
    others are listed by name and help, and their modules are not imported."""
    p = argparse.ArgumentParser(prog="fstbeam", description="finite-state constrained beam search")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (_, help_, description) in COMMANDS.items():
        s = sub.add_parser(name, help=help_, description=description)
        if only is None or only == name:
            _module(name).add_arguments(s)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (its first item that is not an option), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: list[str] | None = None, *, process: bool = False) -> int:
    """Run one command; its exit status. ``process``: this call is the whole process (the console
    script, :func:`command`): ``generate`` then freezes start-up objects for the collector and
    ends the process itself once its output is flushed."""
    argv = sys.argv[1:] if argv is None else list(argv)
    name = _command_of(argv)
    try:
        args = build_parser(name).parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help 0
        return int(exc.code or 0)
    try:
        status: int = _module(args.command).run(args, process=process)
        return status
    except KeyboardInterrupt:
        sys.stdout.flush()
        print(f"fstbeam {args.command}: interrupted (results printed so far are complete)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0


def command() -> int:
    """The ``fstbeam`` console script: :func:`main` as the whole process."""
    return main(process=True)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(command())
