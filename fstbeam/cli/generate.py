"""``fstbeam generate``: decodes prompts under constraints (``fstbeam.cli.main`` dispatches to it).

    fstbeam generate --cefr A1 --format qa "What do you eat for breakfast?"
    fstbeam generate --constraints a1.fstbeam --file prompts.txt --jsonl
    fstbeam generate --phrase "green tea" --beam 8 --nbest 3 "Write about your morning."

Constraints come from a compiled artifact (``--constraints``) or from the same flags as
``compile-constraints compile`` (compiled on the fly for the decoder's tokenizer). Exit codes:
0 every output satisfies the constraints, 1 some output does not (``satisfied=False``),
2 usage or input error.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from .._startup import Stages, no_gc
from .flags import (
    add_constraint_flags,
    add_packed_weights_flag,
    add_preset_flag,
    add_search_flags,
    constraint_flags_given,
    format_arg,
    nonempty,
    search_config_for,
    utf8_text,
)
from .inputs import is_jsonl
from .process_exit import end_process

__all__ = ["add_arguments", "run", "main", "build_parser", "command"]


def add_arguments(g: argparse.ArgumentParser) -> None:
    """The flags of ``fstbeam generate`` (``fstbeam.cli.main`` makes the subcommand's parser)."""
    g.add_argument("prompts", nargs="*", type=utf8_text, metavar="PROMPT", help="prompt text (or use --file)")
    g.add_argument("--file", type=nonempty, metavar="FILE",
                   help="prompts, one per line ('-' = stdin); a .jsonl file holds one JSON object per line with the "
                        "prompt and its own phrases/avoid/prefix (docs/terminology.md)")
    src = g.add_argument_group("constraints (an artifact, or the compile-constraints flags)")
    src.add_argument("--constraints", type=nonempty, metavar="ARTIFACT", help="compiled artifact from compile-constraints")
    add_constraint_flags(src)
    src.add_argument("--leading-space", action=argparse.BooleanOptionalAction, default=None,
                     help="the output may start with a space before the first word (default: yes when the prompt is "
                          "continued as text, i.e. --format raw/qa/TEMPLATE, no for chat)")
    m = g.add_argument_group("model")
    m.add_argument("--model", type=nonempty, metavar="PATH", help="Hugging Face model folder or id (default: Gemma 3 270M)")
    m.add_argument("--tokenizer", type=nonempty, metavar="PATH", help="tokenizer (default: the model's)")
    m.add_argument("--device", type=nonempty, default="auto", help="cpu, cuda, cuda:1, or auto (default)")
    add_packed_weights_flag(m)
    m.add_argument("--format", type=format_arg, default="auto", metavar="raw|chat|auto|qa|TEMPLATE",
                   help="prompt format: raw text, the chat template, auto (chat if the tokenizer has one), "
                        "qa ('Question: ...\\nAnswer:'), or a template containing {prompt}")
    s = g.add_argument_group("search (a flag left out keeps the task preset's value)")
    add_preset_flag(s)
    add_search_flags(s)
    out = g.add_argument_group("output")
    out.add_argument("--jsonl", action="store_true", help="one JSON object per prompt")
    out.add_argument("-q", "--quiet", action="store_true", help="only the generated text")
    out.add_argument("--timings", action="store_true",
                     help="print the seconds (wall and CPU) of each stage to stderr: import, model, constraints, decode")
    out.add_argument("--explain", action="store_true",
                     help="why each output: constrained words marked, what each token advanced, per-token "
                          "log-probabilities, the length reward, the best unconstrained score (a second search)")


def _read_prompts(args) -> list[str]:
    from ..errors import DecodeError
    from ..files.textfile import decode_utf8, read_utf8

    prompts = list(args.prompts)
    if args.file and not is_jsonl(args.file):  # a .jsonl file is read by _jsonl_inputs
        expect = "give a UTF-8 text file with one prompt per line ('-' = stdin)"
        if args.file == "-":
            text = decode_utf8(sys.stdin.buffer.read(), "prompt file <stdin>", DecodeError)
        else:
            text = read_utf8(args.file, DecodeError, what="prompt file", expect=expect)
        prompts += [line for line in text.splitlines() if line.strip()]
    return prompts


def _constraints(args, decoder):
    """The command's shared constraints: an artifact, or the constraint flags compiled as one
    `ConstraintRequest` for the decoder's tokenizer (``None``: no constraint)."""
    flags = constraint_flags_given(args)
    if args.constraints:
        from ..contract.compiled import load_constraints

        return load_constraints(args.constraints, tokenizer=decoder.tokenizer)
    if not flags:
        return None
    from ..compiler.compiler import compiler_for
    from ..compiler.request import ConstraintRequest

    request = ConstraintRequest.from_args(args)
    if args.leading_space is None:  # not given: the prompt format's, as at every door
        request = dataclasses.replace(request, leading_space="auto")
    request = request.for_prompt_format(decoder.continues_text)
    return compiler_for(decoder.tokenizer if args.canonical else decoder.vocab).compile_request(request)


def _timings(args) -> Stages:
    """Start-up stages, printed to stderr with ``--timings``."""
    def say(name: str, wall: float, cpu: float) -> None:
        print(f"fstbeam generate: {name} {wall:.2f} s (cpu {cpu:.2f} s)", file=sys.stderr, flush=True)

    return Stages(say if args.timings else None)


def _generate(args, process: bool = False) -> int:
    from ..errors import Error
    from ..files.status import status

    st = _timings(args)
    try:
        # start-up makes no garbage to collect (fstbeam/_startup.py); what it made lives as long
        # as the process, if this command is the process
        with no_gc(freeze=process):
            with st.stage("import"), status("loading torch and transformers"):  # a first run compiles them
                from ..runtime.decoder import Decoder
                from ..runtime.templates import prompt_format
                from ..validate import check_device
            check_device(args.device, "--device")  # before the model loads: exit 2, not a traceback
            prompts = _read_prompts(args)
            jsonl_in = bool(args.file) and is_jsonl(args.file)
            if not prompts and not jsonl_in:
                print("fstbeam generate: no prompts (give PROMPT arguments or --file FILE)", file=sys.stderr)
                return 2
            with st.stage("model"):
                decoder = Decoder(args.model, args.tokenizer, device=args.device,
                                  prompt_format=prompt_format(args.format), packed_weights=args.packed_weights)
            cfg = search_config_for(args, decoder.continues_text)
            with st.stage("constraints"):
                cc = _constraints(args, decoder)
            constraints, lines, bad_lines = cc, None, []
            if jsonl_in:  # per-line constraints on top of the shared ones; bad lines reported, not decoded
                prompts, constraints, lines, bad_lines = _jsonl_inputs(args.file, prompts, cc, decoder)
                if not prompts:
                    _print_bad_lines(args, bad_lines, None)
                    return 2
        with st.stage("decode"):
            results = decoder.stream(prompts, constraints, cfg, ordered=True)
            if not args.quiet:  # a status line while a file or an explanation takes long (cli/progress.py)
                from .progress import counted

                results = counted(results, len(prompts), "decoding")
            code = _print_results(args, constraints, results, lines, bad_lines)
        if args.timings:
            wall, cpu = st.total()
            print(f"fstbeam generate: total {wall:.2f} s (cpu {cpu:.2f} s)",
                  file=sys.stderr, flush=True)
        return code
    except argparse.ArgumentTypeError as exc:
        print(f"fstbeam generate: {exc}", file=sys.stderr)
        return 2
    except (Error, ValueError, OSError) as exc:
        print(f"fstbeam generate: {exc}", file=sys.stderr)
        return 2


def _print_results(args, constraints, results, lines=None, bad_lines=()) -> int:
    """Print each result as it finishes (flushed), so Ctrl-C keeps what is done. ``constraints``:
    one for every input, or one per input (a .jsonl file's lines bring their own). With --jsonl, a
    bad input line gets an error record (with its ``line``) in its place among the results."""
    import warnings

    bad = 0
    bad_lines = list(bad_lines)
    any_bad_line = bool(bad_lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reported per result below
        for r in results:
            bad += (not r.satisfied) or r.error is not None
            line = None if lines is None else lines[r.index]
            bad_lines = _print_bad_lines(args, bad_lines, line)
            cc = constraints[r.index] if isinstance(constraints, list) else constraints
            _print_result(args, cc, r, _describe(args, cc), line)
            sys.stdout.flush()
    _print_bad_lines(args, bad_lines, None)
    return 2 if any_bad_line else 1 if bad else 0


def _print_bad_lines(args, bad_lines: list, before: int | None) -> list:
    """Print the error records of the bad lines before line ``before`` (all if None); returns the rest."""
    rest = []
    for number, msg in bad_lines:
        if before is not None and number > before:
            rest.append((number, msg))
            continue
        if args.jsonl:  # the one error shape (GenerationResult.failed), with its line
            from ..runtime.results import GenerationResult

            print(json.dumps({**GenerationResult.failed(None, msg).to_dict(), "line": number}, ensure_ascii=False))
    return rest


def _jsonl_inputs(path, prompts, cc, decoder):
    """(prompts, constraints, line numbers (None: a PROMPT argument), bad lines) for --file X.jsonl."""
    from .inputs import read_inputs

    inp = read_inputs(path, cc, decoder.vocab, decoder.continues_text)
    for msg in inp.errors:
        print(f"fstbeam generate: {msg}", file=sys.stderr)
    per = [cc] * len(prompts) + inp.constraints
    return prompts + inp.prompts, per, [None] * len(prompts) + inp.lines, list(zip(inp.error_lines, inp.errors))


def _print_result(args, cc, r, what: str, line: int | None = None) -> None:
    explained = _explain(args, r)
    if args.jsonl:
        d = r.to_dict()
        if line is not None:  # the input's line in a .jsonl file
            d["line"] = line
        if explained is not None:
            d["explain"] = explained.to_dict()
        print(json.dumps(d, ensure_ascii=False))
        return
    if args.quiet:
        print(r.text.strip())
        return
    print(f"> {r.prompt}")
    for k, h in enumerate(r.hypotheses or ()):
        tag = f"[{k + 1}] " if len(r.hypotheses) > 1 else ""
        print(f"{tag}{h.text.strip()}")
        cut = "; cut at the length limit (--max-new-tokens)" if h.finish_reason == "length" else ""
        if cc is not None:
            print(f"    satisfied: {'yes' if h.satisfied else 'NO'}{' (' + what + ')' if what else ''}"
                  f"{'; phrases met: ' + str(list(h.phrases_met)) if h.phrases_met else ''}"
                  f"; score {h.score:.3f}{cut}")
        elif cut:
            print(f"    {cut[2:]}")
    for w in r.warnings:
        print(f"    warning: {w}")
    if r.error:
        print(f"    error: {r.error}")
    if explained is not None:
        from .colors import use_color

        print("    " + explained.render(color=use_color(sys.stdout)).replace("\n", "\n    "))


def _explain(args, r):
    """``--explain``: the result's explanation (None without the flag or for an input error)."""
    if not getattr(args, "explain", False) or r.error is not None:
        return None
    from .progress import explaining

    with explaining(r.index):
        return r.explain()


def _describe(args, cc) -> str:
    from ..runtime.structured_check import describe_structured

    spec = getattr(cc, "spec", None) or {}
    structured = describe_structured(spec)
    out = []
    cefr = args.cefr or spec.get("cefr")
    words = args.words or (spec.get("words") or {}).get("source")
    if cefr:
        out.append(f"every word is CEFR {str(cefr).upper()} or below")
    elif words:
        out.append(f"every word is in {Path(str(words)).name}")
    elif spec.get("grammar"):
        out.append(f"accepted by grammar {spec['grammar']}")
    return "; ".join(out + structured)


def run(args, *, process: bool = False) -> int:
    """``fstbeam generate`` with parsed flags; its exit status. ``process``: this call is the whole
    process: start-up objects are frozen for the collector and the process ends itself once its
    output is flushed (tearing down torch and transformers takes about 1 s; a finished
    ``generate`` owns no file or thread that needs it)."""
    from .usage import check_generate

    problem = check_generate(args)
    if problem:  # before any model load: a usage error returns at once
        print(f"fstbeam generate: {problem}", file=sys.stderr)
        return 2
    code = _generate(args, process)
    if process:
        end_process(code)
    return code


# ``fstbeam.cli.generate`` was the whole command before each subcommand had a module; the
# console script of an older install still names ``fstbeam.cli.generate:command``.
def main(argv: list[str] | None = None, *, process: bool = False) -> int:
    """The ``fstbeam`` command (:func:`fstbeam.cli.main.main`)."""
    from .main import main as run_command

    return run_command(argv, process=process)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``fstbeam`` parser (:func:`fstbeam.cli.main.build_parser`)."""
    from .main import build_parser as parser

    return parser(only)


def command() -> int:
    """The ``fstbeam`` console script (:func:`fstbeam.cli.main.command`)."""
    from .main import command as run_command

    return run_command()
