"""`compile_constraints`: spec -> character automaton -> token automaton -> tables.

Word lists and grammars form the *hard* automaton (compiled ahead of time, once per word list).
Phrases, avoid phrases and the prefix are small automata compiled per request in milliseconds
against a per-tokenizer index; their consistency with the hard language is checked here at the
character level so a contradiction is an error at compile time, not an empty beam later.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterable

import numpy as np
import pynini

from ..errors import SpecError, UnsatisfiableConstraintError
from ..fst.optimize import optimize, sigma_star
from ..grammars.lib.wordlist import text_dfa_fst_bytes, word_list_dfa
from .cefr import cefr_words, parse_level
from .char_dfa import CharDFA, arcs_to_dfa, fst_to_dfa
from .disk_cache import load_arrays, source_fingerprint, store_arrays
from .satisfy import avoidable, phrase_possible, reachable_pair
from .compiled import CompiledConstraints
from .spec import ConstraintSpec, Phrase, WordList, as_phrases, read_word_file
from .tables import HardTables, build_tables
from .token_fsa import lift
from .token_trie import token_trie
from .vocab import Vocab, load_vocab

log = logging.getLogger(__name__)

NONWORD_BYTES = bytes(b for b in range(1, 128) if not chr(b).isalnum())


class _Stages:
    """Per-stage timings, and a progress bar on long compiles when asked."""

    def __init__(self, progress: bool):
        self.timings: dict[str, float] = {}
        self.bar = None
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=0, bar_format="{desc}", leave=False)

    @contextmanager
    def __call__(self, name: str):
        if self.bar is not None:
            self.bar.set_description_str(f"fstbeam: {name}...")
        t = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - t, 4)
        log.info("stage %s: %.3f s", name, self.timings[name])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _words_spec(words, cefr) -> WordList | None:
    if words is not None and cefr is not None:
        raise SpecError("give either words= or cefr=, not both (a CEFR level is a word list)")
    if cefr is not None:
        parse_level(cefr)
        return WordList(tuple(cefr_words(cefr)), f"cefr:{str(cefr).upper()}")
    if words is None:
        return None
    if isinstance(words, WordList):
        return words
    if isinstance(words, (str, os.PathLike)):
        return read_word_file(words)
    items = tuple(str(w).strip() for w in words if str(w).strip())
    if not items:
        raise SpecError("words= is empty: give at least one word")
    return WordList(items, "argument")


def _grammar_language(grammar, grammar_params):
    """(language fst | None, phrases, avoid, description, source hash) for ``grammar``."""
    if grammar is None:
        return None, (), (), None, None
    if isinstance(grammar, pynini.Fst):
        h = hashlib.sha256(_fst_bytes(grammar)).hexdigest()
        return grammar, (), (), f"custom:{h[:12]}", h
    from .. import grammars

    build = grammars.get(str(grammar)).build(**(grammar_params or {}))
    desc = f"{grammar}({', '.join(f'{k}={v}' for k, v in sorted((grammar_params or {}).items()))})"
    return build.language, tuple(build.phrases), tuple(build.avoid), desc, build.source_hash


def _fst_bytes(fst: pynini.Fst) -> bytes:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".fst") as tmp:
        fst.write(tmp.name)
        return open(tmp.name, "rb").read()


def _byte_union(chars: bytes) -> pynini.Fst:
    f = pynini.Fst()
    s, e = f.add_state(), f.add_state()
    f.set_start(s)
    f.set_final(e)
    one = pynini.Weight.one(f.weight_type())
    for b in sorted(set(chars)):
        f.add_arc(s, pynini.Arc(b, b, one, e))
    return f


def _literal(text: str, case_sensitive: bool) -> pynini.Fst:
    data = text.encode("utf-8")
    if case_sensitive:
        return pynini.accep(pynini.escape(text), token_type="byte")
    out = pynini.accep("")
    for b in data:
        out = out + _byte_union(bytes({b, ord(chr(b).lower()), ord(chr(b).upper())}) if b < 128 else bytes([b]))
    return out.optimize()


def contains_fst(p: Phrase) -> pynini.Fst:
    """Character language of texts containing ``p`` (boundaries as in DESIGN.md)."""
    data = p.text.encode("utf-8")
    sig = sigma_star()
    lit = _literal(p.text, p.case_sensitive)
    left = right = sig
    if p.word_boundary:
        nonword = _byte_union(NONWORD_BYTES)
        if data[0] not in NONWORD_BYTES:
            left = pynini.union("", sig + nonword)
        if data[-1] not in NONWORD_BYTES:
            right = pynini.union("", nonword + sig)
    return (left + lit + right).optimize()


def _with_grammar(words_text, words_desc, g_lang, g_desc) -> tuple[pynini.Fst, str]:
    """(the hard language, its description): the grammar, intersected with the word list if any."""
    g = optimize(g_lang, stage=f"grammar {g_desc}")
    if _is_empty(g):
        raise UnsatisfiableConstraintError(f"grammar {g_desc} accepts no text", (f"grammar {g_desc}",))
    if words_text is None:
        return g, f"grammar {g_desc}"
    words = pynini.Fst.read_from_string(text_dfa_fst_bytes(words_text))
    both = optimize(pynini.intersect(words, g), stage="words & grammar")
    if _is_empty(both):
        raise UnsatisfiableConstraintError(
            f"{words_desc} and grammar {g_desc} have no text in common", (words_desc, f"grammar {g_desc}")
        )
    return both, f"{words_desc} and grammar {g_desc}"


def _hard_key(vocab: Vocab, wl: WordList | None, g_hash, opts: dict) -> str:
    """Disk-cache key of the hard part: the list, the grammar, the options, the tokenizer and the
    source of every module that builds it."""
    from ..fst import vector_fst
    from ..grammars.lib import acyclic, text, text_dfa, wordlist
    from . import artifact, char_dfa, tables, token_fsa, token_trie as trie_module

    h = hashlib.sha256(json.dumps([vocab.fingerprint, g_hash, sorted(opts.items())]).encode())
    if wl is not None:
        h.update("\n".join(wl.words).encode())
    h.update(source_fingerprint(
        acyclic, text, text_dfa, wordlist, vector_fst, artifact, char_dfa, tables, token_fsa, trie_module, sys.modules[__name__]
    ).encode())
    return h.hexdigest()


def _compile_hard(stages, tokenizer, vocab: Vocab, wl, g_lang, g_desc, opts) -> dict[str, np.ndarray]:
    """Word list and/or grammar -> character DFA -> token automaton -> tables, as flat arrays."""
    hard_fst = hard_text = None
    hard_desc = f"the word list ({wl.source})" if wl is not None else None
    if wl is not None:
        with stages("word list"):
            # Built as arrays (no pynini) unless a grammar must be intersected with it.
            hard_text = word_list_dfa(
                wl.words, case_variants=opts["case_variants"], digits=opts["digits"],
                leading_space=opts["leading_space"] and g_lang is None,
            )
    if g_lang is not None:
        with stages("grammar"):
            hard_fst, hard_desc = _with_grammar(hard_text, hard_desc, g_lang, g_desc)
            hard_text = None
        if opts["leading_space"]:
            space = pynini.accep(" ", token_type="byte")
            hard_fst = optimize(pynini.closure(space, 0, 1) + hard_fst, stage="leading space")
    with stages("lift"):
        if hard_text is not None:  # lifted from its arcs, no [S, 256] table
            char_fst = text_dfa_fst_bytes(hard_text)
            arcs = (hard_text.final, hard_text.src, hard_text.byte, hard_text.dst, 0)
            source = hard_text
        else:
            hard_fst = pynini.connect(hard_fst)
            source, char_fst = fst_to_dfa(hard_fst), _fst_bytes(hard_fst)
            q, b = np.nonzero(source.next >= 0)
            arcs = (source.final, q, b, source.next[q, b], source.start)
        allowed = _canonical_tokens(tokenizer, vocab, wl) if opts["canonical"] else None
        fsa = lift(source, token_trie(vocab), vocab.width, allowed_tokens=allowed)
        del hard_text, hard_fst, source
    if not fsa.final.any():
        raise UnsatisfiableConstraintError(
            f"no token sequence of {vocab.describe()} spells any text allowed by {hard_desc}",
            (hard_desc, "tokenizer"),
        )
    with stages("tables"):
        hard = build_tables(fsa, vocab)
        from .artifact import token_fst_bytes

        out = {f"t_{k}": v for k, v in hard.arrays().items()}
        out.update(
            t_start=np.int64(hard.start), t_width=np.int64(hard.width), char_state=fsa.char_state,
            token_fst=np.frombuffer(token_fst_bytes(fsa), np.uint8), char_fst=np.frombuffer(char_fst, np.uint8),
            c_final=arcs[0], c_src=np.asarray(arcs[1], np.int32), c_byte=np.asarray(arcs[2], np.uint8),
            c_dst=np.asarray(arcs[3], np.int32), c_start=np.int64(arcs[4]),
        )
    return out


def _unpack_hard(a: dict[str, np.ndarray]):
    """(tables, token fst bytes, char fst bytes, char_state, char-DFA arcs) from `_compile_hard`."""
    hard = HardTables(
        start=int(a["t_start"]), width=int(a["t_width"]), **{k: a[f"t_{k}"] for k in HardTables.ARRAYS}
    )
    arcs = (a["c_final"], a["c_src"], a["c_byte"], a["c_dst"], int(a["c_start"]))
    return hard, a["token_fst"].tobytes(), a["char_fst"].tobytes(), a["char_state"], arcs


def _is_empty(fst: pynini.Fst) -> bool:
    f = pynini.connect(fst.copy())
    return f.num_states() == 0


# Compiled word lists / grammars kept in the disk cache (oldest dropped first).
HARD_CACHE_ENTRIES = 8
_SIGMA_DFA = CharDFA(np.where(np.arange(256) > 0, 0, -1).astype(np.int32)[None, :], np.ones(1, bool), 0)
_DFA_CACHE: dict[str, CharDFA] = {}


def _hard_dfa(char_fst: bytes | None, key: str) -> CharDFA:
    if char_fst is None:
        return _SIGMA_DFA
    hit = _DFA_CACHE.get(key)
    if hit is None:
        if len(_DFA_CACHE) > 8:
            _DFA_CACHE.clear()
        hit = _DFA_CACHE[key] = fst_to_dfa(pynini.Fst.read_from_string(char_fst))
    return hit


def _check_request(hard: CharDFA, base_name, phrases, avoid, prefix) -> None:
    """Raise UnsatisfiableConstraintError naming the parts that conflict (docs/compiler.md)."""
    base_name = base_name or "the output"
    start = (prefix or "").encode("utf-8")
    if prefix is not None and hard.run(start) < 0:
        raise UnsatisfiableConstraintError(
            f"no text allowed by {base_name} starts with the prefix {prefix!r}: "
            "check the prefix's spelling or add its words to the list",
            ("prefix", base_name),
        )
    with_prefix = " after the prefix" if prefix else ""
    for p in phrases:
        if prefix is None:  # a local check: run the phrase from every state it may start in
            ok = phrase_possible(hard, p.text, word_boundary=p.word_boundary, case_sensitive=p.case_sensitive)
        else:  # the phrase may overlap the prefix: search (hard, phrase) state pairs
            ok = reachable_pair(hard, fst_to_dfa(contains_fst(p)), want_other_final=True, start_text=start)
        if not ok:
            raise UnsatisfiableConstraintError(
                f"phrase {p.text!r} ({p.source}) cannot appear in any text allowed by {base_name}{with_prefix}: "
                "add its words to the list or drop the phrase",
                (f"phrase {p.text!r}", base_name),
            )
    if avoid:
        if not avoidable(hard, [fst_to_dfa(contains_fst(a)) for a in avoid], start_text=start):
            raise UnsatisfiableConstraintError(
                f"the avoid list {[a.text for a in avoid]} blocks every text allowed by {base_name}{with_prefix}",
                ("avoid", base_name),
            )


def compile_constraints(
    *,
    words: str | os.PathLike | Iterable[str] | None = None,
    cefr: str | None = None,
    phrases: Iterable[str | Phrase] = (),
    avoid: Iterable[str | Phrase] = (),
    prefix: str | None = None,
    grammar: str | pynini.Fst | None = None,
    grammar_params: dict | None = None,
    tokenizer="default",
    canonical: bool = False,
    case_variants: bool = True,
    digits: bool = True,
    leading_space: bool = False,
    progress: bool = False,
) -> CompiledConstraints:
    """Compile constraints for ``tokenizer`` (a HF tokenizer, a path, ``"default"`` or a Vocab).

    ``words``: a file (one entry per line) or an iterable of words; ``cefr``: a level such as
    ``"A1"`` (every word at or below it); ``phrases``: must appear; ``avoid``: must never appear;
    ``prefix``: the output must start with it (it may end inside a token); ``grammar``: a
    registered grammar name (with ``grammar_params``) or a pynini acceptor over bytes.
    ``canonical=True`` keeps only tokens the tokenizer itself uses to spell the listed words.
    ``case_variants``: also allow Title and UPPER forms of listed words; ``digits``: also allow
    numbers written in digits between the words. ``leading_space``: the output may start with one
    space before the word list's or grammar's text (as a continuation of "Answer:" naturally does).
    """
    stages = _Stages(progress)
    try:
        with stages("tokenizer"):
            vocab = load_vocab(tokenizer)
        wl = _words_spec(words, cefr)
        g_lang, g_phr, g_avoid, g_desc, g_hash = _grammar_language(grammar, grammar_params)
        phr = as_phrases(phrases, "phrases") + as_phrases(g_phr, f"grammar {grammar}")
        avd = as_phrases(avoid, "avoid") + as_phrases(g_avoid, f"grammar {grammar}")
        if prefix is not None and (not isinstance(prefix, str) or prefix == ""):
            raise SpecError("prefix= must be non-empty text (or None for no prefix)")
        spec = ConstraintSpec(
            words=wl, cefr=str(cefr).upper() if cefr else None, phrases=phr, avoid=avd, prefix=prefix,
            grammar=g_desc, grammar_hash=g_hash, canonical=canonical,
            extra={"case_variants": case_variants, "digits": digits, **({"leading_space": True} if leading_space else {})},
        )
        if leading_space and wl is None and g_lang is None:
            raise SpecError(
                "leading_space=True applies to a word list or grammar: give words=, cefr= or grammar= "
                "(phrases, avoid and prefix alone allow any text, spaces included)"
            )
        hard = token_fst = char_fst = char_state = None
        dfa, hard_desc = _SIGMA_DFA, None
        if wl is not None or g_lang is not None:
            opts = dict(case_variants=case_variants, digits=digits, leading_space=leading_space, canonical=canonical)
            hard_desc = " and ".join(
                ([f"the word list ({wl.source})"] if wl is not None else []) + ([f"grammar {g_desc}"] if g_lang is not None else [])
            )
            key = _hard_key(vocab, wl, g_hash, opts)
            hit = load_arrays("hard", key)
            if hit is None:
                built = _compile_hard(stages, tokenizer, vocab, wl, g_lang, g_desc, opts)
                store_arrays("hard", key, built, keep=HARD_CACHE_ENTRIES)
            else:
                log.info("hard automaton loaded from the disk cache (%s)", key[:12])
            hard, token_fst, char_fst, char_state, arcs = _unpack_hard(hit if hit is not None else built)
            if phr or avd or prefix is not None:  # the [S, 256] table only if a check needs it
                dfa = arcs_to_dfa(*arcs)
        with stages("check"):
            _check_request(dfa, hard_desc, phr, avd, prefix)
        cc = CompiledConstraints(
            vocab=vocab, hard=hard, spec=spec.describe(), spec_hash=spec.spec_hash(),
            token_fst=token_fst, char_fst=char_fst, char_state=char_state,
        )
        with stages("phrases"):
            cc = _attach_light(cc, phr, avd, prefix)
        return replace(cc, stats={"seconds": stages.timings})
    finally:
        stages.close()


def _attach_light(cc: CompiledConstraints, phrases, avoid, prefix) -> CompiledConstraints:
    if not phrases and not avoid and prefix is None:
        return cc
    from .light import compile_avoid, compile_phrase, compile_prefix
    from .token_index import TokenIndex

    index = TokenIndex.for_vocab(cc.vocab)
    opts = lambda p: dict(word_boundary=p.word_boundary, case_sensitive=p.case_sensitive)  # noqa: E731
    return replace(
        cc,
        phrases=tuple(compile_phrase(p.text, index, **opts(p)) for p in phrases),
        avoid=tuple(compile_avoid(p.text, index, **opts(p)) for p in avoid),
        prefix=compile_prefix(prefix, index) if prefix is not None else None,
    )


def with_request(
    cc: CompiledConstraints, *, phrases=(), avoid=(), prefix: str | None = None, check: bool = True
) -> CompiledConstraints:
    """Per-request constraints on top of a compiled word list/grammar (shares its tables)."""
    phr, avd = as_phrases(phrases, "phrases"), as_phrases(avoid, "avoid")
    if check:
        hard = _hard_dfa(cc.char_fst, cc.spec_hash)
        _check_request(hard, "the compiled constraints" if cc.char_fst else None, phr, avd, prefix)
    spec = dict(cc.spec, phrases=[p.text for p in phr], avoid=[p.text for p in avd], prefix=prefix)
    h = hashlib.sha256((cc.spec_hash + repr((spec["phrases"], spec["avoid"], prefix))).encode()).hexdigest()
    base = replace(cc, phrases=(), avoid=(), prefix=None, spec=spec, spec_hash=h)
    return _attach_light(base, phr, avd, prefix)


def _canonical_tokens(tokenizer, vocab: Vocab, wl: WordList | None) -> np.ndarray:
    """Tokens the tokenizer itself uses for the listed words (with and without a leading space),
    for punctuation, digits and spaces."""
    from .vocab import Vocab as _V

    if isinstance(tokenizer, _V) or wl is None:
        raise SpecError("canonical=True needs a real tokenizer (not a Vocab) and a word list")
    from tokenizers import Tokenizer

    if isinstance(tokenizer, (str, os.PathLike)):
        from pathlib import Path

        if tokenizer == "default":
            from ..default_model import default_tokenizer_dir

            tokenizer = default_tokenizer_dir()
        p = Path(tokenizer)
        tok = Tokenizer.from_file(str(p / "tokenizer.json" if p.is_dir() else p))
    else:
        tok = tokenizer.backend_tokenizer
    from ..grammars.lib.wordlist import cased_forms, contraction_forms

    texts = []
    forms = set(wl.words) | contraction_forms({w.lower() for w in wl.words})
    for w in forms:
        for f in cased_forms(w):
            texts += [f, " " + f, f + "'s", " " + f + "'s"]
    texts += list(".,!?;:)\"'(-0123456789 \n") + [" " + c for c in "(\"'0123456789"]
    ids = set()
    for enc in tok.encode_batch(texts, add_special_tokens=False):
        ids.update(enc.ids)
    return np.array(sorted(i for i in ids if i < vocab.width and vocab.token_bytes[i]), dtype=np.int64)
