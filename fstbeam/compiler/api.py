"""The user's way to compile: `compile_constraints` and `with_request` (docs/api.md); services hold
a `Compiler` and call its `compile_request`. `compile_request` here is a deprecated alias.

Both use the process's `Compiler` for the tokenizer (`compiler_for`), so repeated calls share
its vocabulary, trie, index and automata.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from ..contract.compiled import CompiledConstraints
from ..errors import warn_deprecated
from .compiler import Compiler, compiler_for
from .light.alternatives import AnyOf
from .request import ConstraintRequest
from .spec import Phrase

__all__ = ["Compiler", "compile_constraints", "compile_request", "with_request"]


def compile_constraints(
    *,
    words: str | os.PathLike[str] | Iterable[str] | None = None,
    cefr: str | None = None,
    phrases: Iterable[str | Phrase | AnyOf | Iterable[str]] = (),
    avoid: Iterable[str | Phrase] = (),
    prefix: str | None = None,
    grammar: Any = None,
    grammar_params: Mapping[str, Any] | None = None,
    tokenizer: Any = "default",
    canonical: bool = False,
    case_variants: bool = True,
    digits: bool = True,
    leading_space: bool | str = False,
    ordered: bool = False,
    sentence_case: bool = False,
    progress: bool = False,
    regex: str | None = None,
    choice: Iterable[str] | None = None,
    json_schema: Any = None,
    json_max_depth: int | None = None,
    json_whitespace: str | None = None,
    json_strict: bool | None = None,
) -> CompiledConstraints:
    """Compile constraints for ``tokenizer`` (a HF tokenizer, a path, ``"default"``, a Vocab, a
    ``Decoder`` or a `Compiler`).

    ``words``: a file (one entry per line) or an iterable of words; ``cefr``: a level such as
    ``"A1"``: exactly the word forms listed at or below it (the ``cefr`` grammar adds
    inflections; see docs/api.md); ``phrases``: must appear; ``avoid``: must never appear;
    ``prefix``: the output must start with it (it may end inside a token); ``grammar``: a
    registered grammar name (with ``grammar_params``), a pynini acceptor over bytes, a built
    grammar (``grammars.build(...)``, ``grammars.combine(...)``: its phrases and avoid list come
    along) or a list of them. ``canonical=True`` keeps only tokens the tokenizer itself uses to
    spell the listed words. ``case_variants``: also allow Title and UPPER forms of listed words;
    ``digits``: also allow numbers written in digits between the words. ``leading_space``: the
    output may start with one space before the word list's or grammar's text (as a continuation
    of "Answer:" naturally does); ``"auto"`` takes it from a Decoder's prompt format.
    ``ordered``: the phrases appear in the given order; ``sentence_case``: phrases given as text
    also match with a capital first letter where a sentence starts.

    Structured outputs (docs/structured.md): ``regex``: the whole output matches this ECMA-262
    regular expression; ``choice``: the output is exactly one of these strings; ``json_schema``
    (a dict, JSON text or a file path): the output is JSON valid against the schema, written
    compactly (``json_whitespace="flexible"`` allows whitespace), free nesting and recursion
    unrolled to ``json_max_depth``; ``json_strict=True``: objects and tuples take only the
    members and items their schema declares. They are hard constraints: intersected with a grammar or
    word list (beside a JSON Schema, the word list applies inside its string values), with
    phrases, avoid phrases and a prefix on top.
    """
    request = ConstraintRequest.from_kwargs(
        words=words, cefr=cefr, phrases=phrases, avoid=avoid, prefix=prefix, grammar=grammar,
        grammar_params=grammar_params, canonical=canonical, case_variants=case_variants, digits=digits,
        leading_space=leading_space, ordered=ordered, sentence_case=sentence_case, regex=regex, choice=choice, json_schema=json_schema,
        json_max_depth=json_max_depth, json_whitespace=json_whitespace, json_strict=json_strict,
    )
    return compiler_for(tokenizer).compile_request(request, progress=progress)


def with_request(
    cc: CompiledConstraints, *, phrases: Iterable[str | Phrase | AnyOf | Iterable[str]] = (),
    avoid: Iterable[str | Phrase] = (), prefix: str | None = None, ordered: bool = False,
    check: bool = True,
) -> CompiledConstraints:
    """Per-request constraints on top of ``cc`` by the merge rule of `ConstraintRequest`: the
    new phrases and avoid phrases are added to ``cc``'s own, which stay (one already there is
    kept once)."""
    if not isinstance(cc, CompiledConstraints):
        from ..errors import SpecError

        raise SpecError(f"with_request() takes compiled constraints first (from compile_constraints or "
                        f"load_constraints), not {type(cc).__name__}")
    request = ConstraintRequest.from_kwargs(phrases=phrases, avoid=avoid, prefix=prefix, ordered=ordered)
    return compiler_for(cc.vocab).compile_request(request, base=cc, check=check)


def compile_request(request: ConstraintRequest, tokenizer: Any = "default", *, base: CompiledConstraints | None = None,
                    progress: bool = False, check: bool = True) -> CompiledConstraints:
    """Compile a `ConstraintRequest` for ``tokenizer`` (or, with ``base``, for ``base``'s
    tokenizer: the request's phrases, avoid phrases and prefix are added to ``base`` by the merge
    rule). Deprecated: the one way to compile is `compile_constraints` / `with_request` for users and
    `Compiler.compile_request` for services (what every door calls)."""
    warn_deprecated("fstbeam.compile_request(request, tokenizer, base=...)",
                "fstbeam.Compiler(tokenizer).compile_request(request, base=...) (a service), or compile_constraints / "
                "with_request")
    if not isinstance(request, ConstraintRequest):
        from ..errors import SpecError

        raise SpecError(f"compile_request() takes a ConstraintRequest, not {type(request).__name__} "
                        "(build one with ConstraintRequest.from_json / from_kwargs)")
    comp = compiler_for(tokenizer if base is None else base.vocab)
    return comp.compile_request(request, base=base, progress=progress, check=check)

