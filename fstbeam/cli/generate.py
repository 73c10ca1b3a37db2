"""The ``fstbeam`` command: ``fstbeam generate`` decodes prompts under constraints.

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
import json
import sys
from pathlib import Path

from .flags import add_packed_weights_flag, add_scoring_flags, scoring_options
from .compile_constraints import add_constraint_flags, nonempty, parse_params, phrase_items, utf8_text
from .inputs import is_jsonl
from ..runtime.templates import TEMPLATES, prompt_format  # noqa: F401 - TEMPLATES re-exported

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fstbeam", description="finite-state constrained beam search")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate text for prompts under constraints")
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
    m = g.add_argument_group("model and search")
    m.add_argument("--model", type=nonempty, metavar="PATH", help="Hugging Face model folder or id (default: Gemma 3 270M)")
    m.add_argument("--tokenizer", type=nonempty, metavar="PATH", help="tokenizer (default: the model's)")
    m.add_argument("--device", type=nonempty, default="auto", help="cpu, cuda, cuda:1, or auto (default)")
    add_packed_weights_flag(m)
    m.add_argument("--format", type=nonempty, default="auto", metavar="raw|chat|auto|qa|TEMPLATE",
                   help="prompt format: raw text, the chat template, auto (chat if the tokenizer has one), "
                        "qa ('Question: ...\\nAnswer:'), or a template containing {prompt}")
    m.add_argument("--beam", type=int, default=5, help="beam size (default 5)")
    m.add_argument("--nbest", type=int, default=1, help="outputs per prompt (default 1)")
    m.add_argument("--max-new-tokens", type=int, default=64, help="length limit (default 64)")
    m.add_argument("--length-reward", type=float, default=None, metavar="R",
                   help="bounded length reward per token (default: fstbeam.runtime.defaults; 0 = rank by log-probability)")
    m.add_argument("--length-ratio", type=float, default=None, metavar="X", help="reward up to X * prompt tokens")
    m.add_argument("--min-new-tokens", type=int, default=None, metavar="N",
                   help="no output shorter than N tokens (default 2 for --format qa and chat answers, else 0)")
    m.add_argument("--no-repeat-ngram", type=int, default=None, metavar="N",
                   help="no token N-gram twice in an output (default 4 with the length reward; 0 = off)")
    m.add_argument("--batch-size", type=int, default=8, help="inputs decoded together (default 8)")
    m.add_argument("--stop-at-newline", action="store_true",
                   help="end an output at a newline (where the constraints allow ending); a base model answering "
                        "a question otherwise goes on to invent the next question")
    add_scoring_flags(m)
    out = g.add_argument_group("output")
    out.add_argument("--jsonl", action="store_true", help="one JSON object per prompt")
    out.add_argument("-q", "--quiet", action="store_true", help="only the generated text")
    out.add_argument("--explain", action="store_true",
                     help="why each output: constrained words marked, what each token advanced, per-token "
                          "log-probabilities, the length reward, the best unconstrained score (a second search)")
    from .batch import add_batch_parser

    add_batch_parser(sub)
    return p


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
    flags = args.words or args.cefr or args.phrase or args.avoid or args.prefix or args.grammar
    if args.param and not args.grammar:
        raise ValueError("--param sets a grammar parameter: give --grammar NAME too")
    if args.constraints and flags:
        raise ValueError("give either --constraints ARTIFACT or constraint flags (--words/--cefr/--phrase/...), not both")
    if args.constraints:
        from ..contract.compiled import load_constraints

        return load_constraints(args.constraints, tokenizer=decoder.tokenizer)
    if not flags:
        return None
    from ..compiler.compile import compile_constraints

    hard = bool(args.words or args.cefr or args.grammar)
    lead = decoder.continues_text if args.leading_space is None else args.leading_space
    if args.leading_space and not hard:
        raise ValueError("--leading-space applies to a word list or grammar (--words, --cefr or --grammar)")
    return compile_constraints(
        words=args.words, cefr=args.cefr, phrases=phrase_items(args), avoid=args.avoid, prefix=args.prefix,
        grammar=args.grammar, ordered=args.ordered, grammar_params=parse_params(args.param) or None,
        tokenizer=decoder.tokenizer if args.canonical else decoder.vocab, canonical=args.canonical, leading_space=hard and lead,
    )


def _generate(args) -> int:
    from ..errors import Error
    from ..runtime.decoder import Decoder

    fmt = prompt_format(args.format)
    try:
        prompts = _read_prompts(args)
        jsonl_in = bool(args.file) and is_jsonl(args.file)
        if not prompts and not jsonl_in:
            print("fstbeam generate: no prompts (give PROMPT arguments or --file FILE)", file=sys.stderr)
            return 2
        decoder = Decoder(args.model, args.tokenizer, device=args.device, prompt_format=fmt,
                          packed_weights=args.packed_weights)
        cc = _constraints(args, decoder)
        constraints, lines, bad_lines = cc, None, 0
        if jsonl_in:  # per-line constraints on top of the shared ones; bad lines reported, not decoded
            prompts, constraints, lines, bad_lines = _jsonl_inputs(args.file, prompts, cc, decoder)
            if not prompts:
                return 2
        opts = dict(batch_size=args.batch_size, **scoring_options(args))
        if args.stop_at_newline:
            opts["stop_at"] = "line"
        opts.update(_answer_options(args, decoder))
        results = decoder.stream(prompts, constraints, beam_size=args.beam, nbest=args.nbest,
                                 max_new_tokens=args.max_new_tokens, ordered=True, **opts)
        return _print_results(args, constraints, results, lines, bad_lines)
    except (Error, ValueError, OSError, argparse.ArgumentTypeError) as exc:
        print(f"fstbeam generate: {exc}", file=sys.stderr)
        return 2


def _print_results(args, constraints, results, lines=None, bad_lines: int = 0) -> int:
    """Print each result as it finishes (flushed), so Ctrl-C keeps what is done. ``constraints``:
    one for every input, or one per input (a .jsonl file's lines bring their own)."""
    import warnings

    bad = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reported per result below
        for r in results:
            bad += (not r.satisfied) or r.error is not None
            cc = constraints[r.index] if isinstance(constraints, list) else constraints
            _print_result(args, cc, r, _describe(args, cc), None if lines is None else lines[r.index])
            sys.stdout.flush()
    return 2 if bad_lines else 1 if bad else 0


def _jsonl_inputs(path, prompts, cc, decoder):
    """(prompts, constraints, line numbers (None: a PROMPT argument), bad lines) for --file X.jsonl."""
    from .inputs import read_inputs

    inp = read_inputs(path, cc, decoder.vocab)
    for msg in inp.errors:
        print(f"fstbeam generate: {msg}", file=sys.stderr)
    per = [cc] * len(prompts) + inp.constraints
    return prompts + inp.prompts, per, [None] * len(prompts) + inp.lines, len(inp.errors)


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
        if cc is not None:
            print(f"    satisfied: {'yes' if h.satisfied else 'NO'}{' (' + what + ')' if what else ''}"
                  f"{'; phrases met: ' + str(list(h.phrases_met)) if h.phrases_met else ''}"
                  f"; score {h.score:.3f}")
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
    return r.explain()


def _answer_options(args, decoder) -> dict:
    """The defaults that give answers (``fstbeam.runtime.defaults``), overridden by the flags."""
    from ..runtime.defaults import generate_defaults

    opts = generate_defaults(qa=args.format == "qa" or not decoder.continues_text)
    if args.length_reward is not None:
        opts["length_reward"] = args.length_reward
        if args.length_reward == 0:  # plain log-probability ranking, as before the defaults
            opts.pop("length_ratio", None)
            opts.pop("no_repeat_ngram", None)
            opts.pop("no_repeat_prompt", None)
    if args.length_ratio is not None:
        opts["length_ratio"] = args.length_ratio
    if args.min_new_tokens is not None:
        opts["min_new_tokens"] = args.min_new_tokens
    elif "min_new_tokens" in opts:  # a default never exceeds the length limit asked for
        opts["min_new_tokens"] = max(0, min(opts["min_new_tokens"], args.max_new_tokens))
    if args.no_repeat_ngram is not None:
        opts["no_repeat_ngram"] = args.no_repeat_ngram
    return opts


def _describe(args, cc) -> str:
    spec = getattr(cc, "spec", None) or {}
    cefr = args.cefr or spec.get("cefr")
    if cefr:
        return f"every word is CEFR {str(cefr).upper()} or below"
    words = args.words or (spec.get("words") or {}).get("source")
    if words:
        return f"every word is in {Path(str(words)).name}"
    if spec.get("grammar"):
        return f"accepted by grammar {spec['grammar']}"
    return ""


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help 0
        return int(exc.code or 0)
    from .usage import check_batch, check_generate

    problem = (check_generate if args.command == "generate" else check_batch)(args)
    if problem:  # before any model load: a usage error returns at once
        print(f"fstbeam {args.command}: {problem}", file=sys.stderr)
        return 2
    try:
        if args.command == "generate":
            return _generate(args)
        if args.command == "batch":
            from .batch import run

            return run(args)
    except KeyboardInterrupt:
        sys.stdout.flush()
        print("fstbeam generate: interrupted (results printed so far are complete)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
