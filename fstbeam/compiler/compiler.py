"""`Compiler`: one tokenizer's compile-side state (vocabulary, token trie, token index, hard
automata) behind one object, as XGrammar's ``GrammarCompiler`` is.

Everything it builds lives in one byte-budget cache (`fstbeam.contract.cache`), shared by every
Compiler of the process unless one is given its own budget. `compile_constraints` and
`with_request` (in `fstbeam.compiler.api`) reuse one Compiler per tokenizer, so a Hugging Face
tokenizer object costs the vocabulary build once per process.
"""
from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

from ..contract.cache import ByteCache, shared_cache
from ..contract.compiled import CompiledConstraints
from ..contract.vocab import Vocab, load_vocab
from ..errors import SpecError, warn_deprecated
from .char_dfa import CharDFA, arcs_to_dfa
from .hard.token_trie import TokenTrie, token_trie
from .light.token_index import TokenIndex
from .pipeline import compile_with, extend_with, hard_dfa_from_bytes
from .request import ConstraintRequest

__all__ = ["Compiler", "compiler_for"]


def _tokenizer_and_format(tokenizer):
    """(tokenizer, continues_text or None): a Decoder (anything with ``.vocab`` and
    ``continues_text``) gives its vocabulary and its prompt format."""
    # continues_text first: a HF tokenizer's own ``.vocab`` property builds a 262k-entry dict.
    if not isinstance(tokenizer, (str, Path, Vocab)) and hasattr(tokenizer, "continues_text") and hasattr(tokenizer, "vocab"):
        return tokenizer.vocab, bool(tokenizer.continues_text)
    return tokenizer, None


# compiled object -> its hard character DFA (or the DFA's arcs), for extend(); see Compiler.hard_dfa
_HARD_OF: weakref.WeakKeyDictionary[CompiledConstraints, Any] = weakref.WeakKeyDictionary()
_HARD_LOCK = threading.Lock()


class Compiler:
    """Compiles constraints for one tokenizer (a HF tokenizer, a path, ``"default"``, a Vocab, or
    a ``Decoder``, whose prompt format then resolves ``leading_space="auto"``).

        comp = fstbeam.Compiler("default")
        base = comp.compile_request(ConstraintRequest.from_kwargs(cefr="A2"))
        cc = comp.compile_request(ConstraintRequest.from_json({"phrases": ["the weather"]}), base=base)  # base's stay

    ``cache``: where built objects are kept (default: the process-wide byte-budget cache);
    ``cache_bytes``: give this Compiler its own cache of that many bytes instead.
    """

    def __init__(self, tokenizer="default", *, cache: ByteCache | None = None, cache_bytes: int | None = None):
        if cache is not None and cache_bytes is not None:
            raise SpecError("give cache= or cache_bytes=, not both")
        self.tokenizer, self.continues_text = _tokenizer_and_format(tokenizer)
        self.vocab: Vocab = load_vocab(self.tokenizer)
        self.cache = ByteCache(cache_bytes) if cache_bytes is not None else (cache if cache is not None else shared_cache())

    def __repr__(self) -> str:
        return f"Compiler({self.vocab.describe()}, cache {self.cache.nbytes >> 20} MiB of {self.cache.max_bytes >> 20} MiB)"

    @property
    def trie(self) -> TokenTrie:
        """The byte trie of the vocabulary (built or read from disk on first use)."""
        return token_trie(self.vocab, self.cache)

    @property
    def index(self) -> TokenIndex:
        """The token index that per-request automata are compiled against."""
        return TokenIndex.for_vocab(self.vocab, cache=self.cache)

    def compile(self, *, leading_space: bool | str = False, **spec) -> CompiledConstraints:
        """Deprecated: ``compile_request(ConstraintRequest.from_kwargs(**spec))``, or
        :func:`fstbeam.compile_constraints` with ``tokenizer=`` this Compiler."""
        warn_deprecated("Compiler.compile(**spec)", "Compiler.compile_request(ConstraintRequest.from_kwargs(**spec)) or "
                    "compile_constraints(..., tokenizer=compiler)")
        progress = spec.pop("progress", False)
        return self.compile_request(ConstraintRequest.from_kwargs(leading_space=leading_space, **spec), progress=progress)

    def extend(self, cc: CompiledConstraints, *, phrases=(), avoid=(), prefix: str | None = None, ordered: bool = False,
               check: bool = True) -> CompiledConstraints:
        """Deprecated: ``compile_request(ConstraintRequest.from_kwargs(phrases=...), base=cc)``, or
        :func:`fstbeam.with_request`."""
        warn_deprecated("Compiler.extend(cc, ...)", "Compiler.compile_request(ConstraintRequest.from_kwargs(...), base=cc) "
                    "or with_request(cc, ...)")
        request = ConstraintRequest.from_kwargs(phrases=phrases, avoid=avoid, prefix=prefix, ordered=ordered)
        return self.compile_request(request, base=cc, check=check)

    def compile_request(self, request: ConstraintRequest, *, base: CompiledConstraints | None = None,
                        progress: bool = False, check: bool = True) -> CompiledConstraints:
        """Compile a `ConstraintRequest`; with ``base``, add to ``base`` what the request adds
        by the one merge rule (`ConstraintRequest.added_to`: only the new small automata are
        compiled). Every door ends here."""
        if base is not None:
            if not isinstance(base, CompiledConstraints):
                raise SpecError(f"base= takes compiled constraints, not {type(base).__name__}")
            request = request.added_to(base)
            if not request.has_hard:
                if not request.has_light:
                    return base
                return extend_with(self, base, request, check=check)
        # "auto" without a word list or grammar has nothing to do: phrases, avoid and prefix
        # alone allow any text, a leading space included (True names the user's choice, not this)
        auto_idle = request.leading_space == "auto" and not request.has_hard
        leading_space = False if auto_idle else self._leading_space(request.leading_space)
        return compile_with(self, request, leading_space=leading_space, progress=progress)

    # ---- the hard character automaton, kept so extend() never re-parses char_fst ---------
    # A compile whose request needs no check keeps only the DFA's arcs (a few bytes per arc):
    # the flat [S, 256] table is built on the first extend() that checks against it. Both are
    # kept beside the compiled object (`_HARD_OF`, weakly keyed) and go with it: held in the
    # process-wide cache, every schema a long-lived process had compiled kept its arcs (tens of
    # MB each) up to the cache's 2 GiB, under every later compile's peak.
    def hard_dfa(self, cc: CompiledConstraints) -> CharDFA:
        with _HARD_LOCK:
            kept = _HARD_OF.get(cc)
        if isinstance(kept, CharDFA):
            return kept
        dfa = arcs_to_dfa(*kept) if kept is not None else hard_dfa_from_bytes(cc.char_fst)
        self.remember_hard(cc, dfa)
        return dfa

    def remember_hard(self, cc: CompiledConstraints, dfa: CharDFA) -> None:
        with _HARD_LOCK:
            _HARD_OF[cc] = dfa

    def remember_hard_arcs(self, cc: CompiledConstraints, arcs: tuple) -> None:
        with _HARD_LOCK:
            _HARD_OF[cc] = arcs

    def share_hard(self, base: CompiledConstraints, derived: CompiledConstraints) -> None:
        """``derived`` (from extend) has the same hard automaton as ``base``."""
        with _HARD_LOCK:
            kept = _HARD_OF.get(base)
            if kept is not None:
                _HARD_OF[derived] = kept

    def _leading_space(self, value: bool | str) -> bool:
        if value == "auto":
            if self.continues_text is None:
                raise SpecError(
                    'leading_space="auto" needs tokenizer=<a Decoder> (its prompt format says whether outputs '
                    "continue the prompt's text): pass the decoder, or leading_space=True/False"
                )
            return self.continues_text
        if not isinstance(value, bool):
            raise SpecError(f'leading_space= takes True, False or "auto", not {value!r}')
        return value


# ---- one Compiler per tokenizer -----------------------------------------------------------------
_LOCK = threading.Lock()
_BY_FINGERPRINT: dict[str, Compiler] = {}
_BY_OBJECT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # HF tokenizer / decoder -> fingerprint
_MAX_COMPILERS = 8


def compiler_for(tokenizer) -> Compiler:
    """The process's Compiler for ``tokenizer`` (keyed by the vocabulary's fingerprint; a
    tokenizer object is remembered, so its vocabulary is built once per process)."""
    if isinstance(tokenizer, Compiler):
        return tokenizer
    obj_key = None if isinstance(tokenizer, (str, Path, Vocab)) or tokenizer is None else tokenizer
    if obj_key is not None:
        try:
            fp = _BY_OBJECT.get(obj_key)
        except TypeError:  # not weak-referenceable: no shortcut
            fp, obj_key = None, None
        comp = _BY_FINGERPRINT.get(fp) if fp else None
        if comp is not None and comp.continues_text == _tokenizer_and_format(tokenizer)[1]:
            return comp
    comp = Compiler(tokenizer if tokenizer is not None else "default")
    with _LOCK:
        key = comp.vocab.fingerprint + ("" if comp.continues_text is None else f":continues={comp.continues_text}")
        old = _BY_FINGERPRINT.get(key)
        if old is not None and isinstance(old.tokenizer, Vocab) and not isinstance(comp.tokenizer, Vocab):
            # A Compiler made from a bare Vocab cannot run the tokenizer (canonical=True needs it):
            # the one with the real tokenizer takes its place (their caches are shared anyway).
            _BY_FINGERPRINT[key] = comp
        comp = _BY_FINGERPRINT.setdefault(key, comp)
        while len(_BY_FINGERPRINT) > _MAX_COMPILERS:
            _BY_FINGERPRINT.pop(next(iter(_BY_FINGERPRINT)))
        if obj_key is not None:
            _BY_OBJECT[obj_key] = key
    return comp
