"""The ``compile-constraints`` command: ``compile`` an artifact, ``inspect`` one.

Exit codes: 0 success, 1 a constraint/artifact/tokenizer error (message on stderr), 2 bad usage.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from ..errors import Error, InputError
from .flags import add_constraint_flags, nonempty, parse_params


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="compile-constraints", description="Compile fstbeam constraints into an artifact, or inspect one.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile constraints for a tokenizer into one artifact file")
    add_constraint_flags(c)
    c.add_argument("--tokenizer", type=nonempty, default="default", metavar="PATH|default",
                   help="tokenizer folder / tokenizer.json (default: Gemma 3)")
    c.add_argument("--leading-space", action="store_true",
                   help="the output may start with a space before the first word (for prompts continued as text)")
    c.add_argument("--any", action="store_true",
                   help="compile an artifact without any constraint (allows every text); without it, no constraint is an error")
    c.add_argument("-o", "--output", type=nonempty, required=True, metavar="OUT", help="artifact file to write")
    c.add_argument("-v", "--verbose", action="store_true", help="per-stage timings and sizes")
    c.add_argument("--no-progress", action="store_true", help="no progress display")

    i = sub.add_parser("inspect", help="describe an artifact or a grammar: sizes, samples, allowed tokens, a drawing")
    i.add_argument("artifact", type=nonempty, metavar="OUT", nargs="?", help="artifact file (or use --grammar / --list-grammars)")
    i.add_argument("--tokenizer", type=nonempty, default=None, metavar="PATH|default", help="tokenizer to check the artifact against")
    i.add_argument("--after", metavar="TEXT", help="show the tokens allowed after this text")
    i.add_argument("--limit", type=int, default=30, help="how many allowed tokens to list (default 30)")
    i.add_argument("--draw", type=nonempty, metavar="FILE",
                   help="draw the character automaton: .svg (no Graphviz needed), .png (matplotlib) or .dot")
    i.add_argument("--max-draw-states", type=int, default=200, metavar="N",
                   help="draw at most N states, breadth-first; one box stands for the rest (default 200)")
    i.add_argument("--draw-after", metavar="TEXT", help="draw from the state reached after TEXT instead of the start")
    i.add_argument("--grammar", type=nonempty, metavar="NAME", help="inspect a registered grammar instead of an artifact")
    i.add_argument("--param", type=nonempty, action="append", default=[], metavar="KEY=VALUE", help="grammar parameter (repeatable)")
    i.add_argument("--sample", type=int, default=10, metavar="N", help="how many accepted strings to list (grammar)")
    i.add_argument("--check", action="append", default=[], metavar="TEXT",
                   help="is TEXT accepted? if not, the longest accepted prefix and what may come next (repeatable)")
    i.add_argument("--cases", action="store_true", help="run the grammar's golden cases")
    i.add_argument("--list-grammars", action="store_true", help="list the registered grammars and their parameters")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from .usage import check_compile, check_inspect

    problem = (check_compile if args.command == "compile" else check_inspect)(args)
    if problem:  # before any tokenizer or automaton is loaded
        print(f"error: {problem}", file=sys.stderr)
        return 2
    verbose = getattr(args, "verbose", False)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        if args.command == "compile":
            return _compile(args)
        return _inspect(args)
    except InputError as exc:  # a bad path or value on the command line: a usage error
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except argparse.ArgumentTypeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0


def _compile(args) -> int:
    from ..compiler.compiler import compiler_for
    from ..compiler.request import ConstraintRequest

    # (the flags were checked by usage.check_compile before anything was loaded)
    from ..validate import check_output_path

    out = Path(check_output_path(args.output, "-o/--output"))  # before compiling: never over a device or FIFO
    t0 = time.perf_counter()
    request = ConstraintRequest.from_args(args)
    cc = compiler_for(args.tokenizer).compile_request(request, progress=not args.no_progress and sys.stderr.isatty())
    cc.save(out)
    total = time.perf_counter() - t0
    s = cc.summary()
    if cc.hard is not None:
        print(f"wrote {out}: {s['states']} states, {s['token_arcs_stored']} token arcs, "
              f"{s['table_bytes'] / 1e6:.1f} MB tables, {total:.2f} s")
    else:
        print(f"wrote {out}: {len(cc.phrases)} phrases, {len(cc.avoid)} avoid, prefix={cc.prefix is not None}, {total:.2f} s")
    if args.verbose:
        for stage, sec in cc.stats.get("seconds", {}).items():
            print(f"  {stage:<10} {sec * 1000:8.1f} ms", file=sys.stderr)
    return 0


def _token_text(vocab, t: int) -> str:
    if t in vocab.eos_ids:
        return "<EOS>"
    b = vocab.token_bytes[t]
    return repr(b.decode("utf-8", "backslashreplace")) if b else f"<{t}>"


def _token_list(vocab, ids: list[int]) -> str:
    """Tokens as text; two tokens with the same text (Gemma's "\n" and its byte token <0x0A>)
    are told apart by their ids."""
    texts = [_token_text(vocab, t) for t in ids]
    twice = {x for x in texts if texts.count(x) > 1}
    return ", ".join(f"{x} (id {t})" if x in twice else x for x, t in zip(texts, ids))


def _encode(vocab, tokenizer, text: str) -> list[int]:
    from tokenizers import Tokenizer

    if tokenizer in (None, "default"):
        from ..files.default_model import default_tokenizer_dir

        tokenizer = default_tokenizer_dir()
    p = Path(tokenizer)
    tok = Tokenizer.from_file(str(p / "tokenizer.json" if p.is_dir() else p))
    return tok.encode(text, add_special_tokens=False).ids


def _inspect(args) -> int:
    from ..contract.artifact import read_manifest
    from ..contract.compiled import load_constraints

    if args.list_grammars:
        from ..grammars.describe import list_text

        print(list_text())
        return 0
    if args.grammar:
        from ..grammars.describe import inspect_grammar

        text, code = inspect_grammar(
            args.grammar, parse_params(args.param), sample=args.sample, check=args.check, cases=args.cases,
            draw=args.draw, max_draw_states=args.max_draw_states, draw_after=args.draw_after,
        )
        print(text)
        return code
    if not args.artifact:
        print("error: give an artifact file, --grammar NAME or --list-grammars", file=sys.stderr)
        return 2
    manifest = read_manifest(args.artifact)
    tokenizer = args.tokenizer
    cc = load_constraints(args.artifact, tokenizer=tokenizer)
    print(f"artifact    {args.artifact} (format {manifest['format_version']}, fstbeam {manifest['package_version']})")
    print(f"tokenizer   {cc.vocab.describe()}, fingerprint {cc.vocab.fingerprint[:16]}")
    spec = manifest["spec"]
    structured = [f"{k}={str(spec[k])!r:.80}" for k in ("regex", "choice", "json_schema") if spec.get(k)]
    print(f"spec        words={spec.get('words')} cefr={spec.get('cefr')} grammar={spec.get('grammar')}"
          f"{' leading_space=True' if spec.get('leading_space') else ''}{''.join(' ' + x for x in structured)}")
    if cc.hard is not None and "token.fst" not in manifest["members"] and "token_fst" in manifest:
        print(f"token.fst   not written ({manifest['token_fst']['arcs']:,} arcs in OpenFst's flat form; "
              "the tables hold the same language)")
    if cc.hard is not None:
        h = cc.hard
        print(f"states      {h.num_states}")
        print(f"arcs        {len(h.block_key)} token arcs in {len(h.block_ptr) - 1} shared blocks "
              f"(+{len(h.state_block_id)} state->block links)")
        print(f"table bytes {h.nbytes:,} ({len(h.dense_masks)} dense mask rows, {len(h.state_sparse_tokens)} sparse entries)")
    for a in cc.phrases:
        print(f"phrase      {a.text!r}")
    for a in cc.avoid:
        print(f"avoid       {a.text!r}")
    if cc.prefix is not None:
        print(f"prefix      {cc.prefix.text!r}")
    if args.after is not None:
        m = cc.matcher()
        ids = _encode(cc.vocab, tokenizer, args.after)
        for k, t in enumerate(ids):
            try:
                m.advance(t)
            except Error as exc:
                print(f"after {args.after!r}: blocked at token {k} {_token_text(cc.vocab, t)}: {exc}")
                return 1
        allowed = m.allowed_token_ids()
        shown = _token_list(cc.vocab, [int(t) for t in allowed[: args.limit]])
        more = f" ... (+{len(allowed) - args.limit})" if len(allowed) > args.limit else ""
        print(f"after {args.after!r}: {len(allowed)} tokens allowed, final={m.is_final()}")
        print(f"  {shown}{more}")
    if args.draw:
        import pynini

        from ..fst.draw import describe_drawing, draw

        if cc.char_fst is None:
            print("nothing to draw: this artifact has no word list or grammar automaton", file=sys.stderr)
            return 1
        fst = pynini.Fst.read_from_string(cc.char_fst)
        path = draw(fst, args.draw, max_states=args.max_draw_states, after=args.draw_after)
        print(f"drew        {describe_drawing(fst, path, args.max_draw_states, args.draw_after)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
