"""The one-shot forms: `compile_constraints` and `with_request` (docs/api.md).

Both use the process's `Compiler` for the tokenizer (`compiler_for`), so repeated calls share
its vocabulary, trie, index and automata.
"""
from __future__ import annotations

import os
from typing import Iterable

from ..errors import SpecError
from ..contract.compiled import CompiledConstraints
from .compiler import Compiler, compiler_for
from .spec import Phrase

__all__ = ["Compiler", "compile_constraints", "with_request"]


def compile_constraints(
    *,
    words: str | os.PathLike | Iterable[str] | None = None,
    cefr: str | None = None,
    phrases: Iterable[str | Phrase] = (),
    avoid: Iterable[str | Phrase] = (),
    prefix: str | None = None,
    grammar=None,
    grammar_params: dict | None = None,
    tokenizer="default",
    canonical: bool = False,
    case_variants: bool = True,
    digits: bool = True,
    leading_space: bool | str = False,
    ordered: bool = False,
    progress: bool = False,
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
    """
    _check_first(words, phrases, avoid, prefix)
    return compiler_for(tokenizer).compile(
        words=words, cefr=cefr, phrases=phrases, avoid=avoid, prefix=prefix, grammar=grammar,
        grammar_params=grammar_params, canonical=canonical, case_variants=case_variants, digits=digits,
        leading_space=leading_space, ordered=ordered, progress=progress,
    )


def with_request(
    cc: CompiledConstraints, *, phrases=(), avoid=(), prefix: str | None = None, ordered: bool = False,
    check: bool = True,
) -> CompiledConstraints:
    """Per-request constraints on top of ``cc`` (an alias of `Compiler.extend`): the new phrases
    and avoid phrases are added to ``cc``'s own, which stay."""
    if not (hasattr(cc, "vocab") and hasattr(cc, "phrases") and hasattr(cc, "spec")):
        raise SpecError(f"with_request() takes the compiled constraints to add to (from compile_constraints or "
                        f"load_constraints) first, not {type(cc).__name__} {cc!r:.40}")
    return compiler_for(cc.vocab).extend(cc, phrases=phrases, avoid=avoid, prefix=prefix, ordered=ordered,
                                             check=check)


def _check_first(words, phrases, avoid, prefix) -> None:
    """The per-request limits and texts, before the tokenizer is loaded or checked (a request
    over a limit is refused in milliseconds; `compile_with` checks them again, for every door)."""
    from .build import _words_spec
    from .limits import check_request_limits
    from .spec import as_phrases

    if isinstance(words, (list, tuple)):  # never consume an iterator the compile reads after
        _words_spec(words, None)
    check_request_limits(as_phrases(phrases, "phrases"), as_phrases(avoid, "avoid", flatten=True), prefix)
