"""The hard automaton of a spec (word list and/or grammar): character DFA -> token automaton ->
tables, as flat arrays, cached on disk per (list, grammar, options, tokenizer, builder source).

A word list alone is built as arrays (`word_list_dfa`, no pynini) and lifted from its arcs, so
no [S, 256] table exists unless a check needs one. A grammar goes through pynini (intersected
with the word list's text automaton when both are given). docs/compiler.md.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pynini

from ...contract.disk_cache import load_arrays, source_fingerprint, store_arrays
from ...contract.hard import HardTables
from ...contract.vocab import Vocab
from ...errors import SpecError, UnsatisfiableConstraintError
from ...fst.optimize import optimize
from ...fst.vector_fst import openfst_bytes, vector_fst_bytes
from ...fst.wordlist.language import text_dfa_fst_bytes, word_list_dfa
from ..char_dfa import fst_bytes_to_arcs, fst_to_dfa
from ..spec import WordList
from .array_ops import TRIM_ABOVE, ascending_counts, trim_heap
from .lift.token_fsa import LiftSizeError, char_arcs, lift
from .tables import build_tables

log = logging.getLogger(__name__)

# Compiled word lists / grammars kept in the disk cache (oldest dropped first).
HARD_CACHE_ENTRIES = 8

Arcs = tuple  # (final, src, byte, dst, start) of the hard character DFA


@dataclass(frozen=True)
class LazyLanguage:
    """A hard language built only on a disk-cache miss (a structured constraint's), with what
    the pipeline must know of it beforehand."""

    build: Callable[[], pynini.Fst]
    # `build` returns what `optimize` would (a connected minimal DFA, arcs sorted by label), so
    # the pipeline does not optimize it again (a second minimize of a large schema's document
    # costs seconds)
    optimized: bool = False
    # added to the "accepts no text" error, after the language's name (": ...")
    empty_hint: str = ""
    # added to the "too many token arcs" error (how to make the language smaller)
    size_hint: str = ""


def hard_automaton(comp, stages, wl: WordList | None, g_lang, g_desc, g_hash, opts: dict):
    """(tables, char fst bytes, char_state, char-DFA arcs) of the hard part, loaded from the
    disk cache or built (and stored). The token automaton's OpenFst form is written from the
    tables when an artifact is saved (`HardTables.token_fst`)."""
    with stages("cache load"):
        key = hard_key(comp.vocab, wl, g_hash, opts)
        hit = load_arrays("hard", key)
    if hit is None:
        hit = compile_hard(stages, comp, wl, g_lang, g_desc, opts)
        with stages("cache store"):
            store_arrays("hard", key, hit, keep=HARD_CACHE_ENTRIES)
    else:
        log.info("hard automaton loaded from the disk cache (%s)", key[:12])
    return unpack_hard(hit)


def hard_key(vocab: Vocab, wl: WordList | None, g_hash, opts: dict) -> str:
    """Disk-cache key of the hard part: the list, the grammar, the options, the tokenizer and the
    source of every module that builds it."""
    from ...contract import bitmask, hard, layout
    from ...fst import labels, small_determinize, vector_fst
    from ...fst import optimize as fst_optimize
    from ...fst import text as word_bytes
    from ...fst.wordlist import acyclic, text_dfa
    from ...fst.wordlist import chars as text
    from ...fst.wordlist import language as wordlist
    from .. import char_dfa
    from . import array_ops, tables, token_trie
    from .lift import (
        assemble,
        chain_blocks,
        chain_levels,
        group_exits,
        loop_rows,
        near_blocks,
        shared_walks,
        token_fsa,
        trie_step,
        walk_memo,
    )

    h = hashlib.sha256(json.dumps([vocab.fingerprint, g_hash, sorted(opts.items())]).encode())
    if wl is not None:
        h.update("\n".join(wl.words).encode())
    h.update(source_fingerprint(
        acyclic, text, text_dfa, wordlist, vector_fst, fst_optimize, labels, small_determinize, word_bytes, bitmask, hard,
        layout, char_dfa, tables, token_fsa, token_trie, shared_walks, array_ops, assemble, chain_blocks, chain_levels,
        group_exits, loop_rows, near_blocks, trie_step, walk_memo, sys.modules[__name__],
    ).encode())
    return h.hexdigest()


def compile_hard(stages, comp, wl: WordList | None, g_lang, g_desc, opts: dict) -> dict[str, np.ndarray]:
    """Word list and/or grammar -> character DFA -> token automaton -> tables, as flat arrays."""
    vocab = comp.vocab
    hard_fst = hard_text = None
    hard_desc = f"the word list ({wl.source})" if wl is not None else None
    if wl is not None:
        log.info("word list %s: %d entries", wl.source, len(wl.words))
        with stages("word list"):
            # Built as arrays (no pynini) unless a grammar must be intersected with it.
            hard_text = word_list_dfa(
                wl.words, case_variants=opts["case_variants"], digits=opts["digits"],
                leading_space=opts["leading_space"] and g_lang is None,
            )
    lazy = g_lang if isinstance(g_lang, LazyLanguage) else None
    if lazy is not None:  # a structured language (regex, choice, JSON Schema): built on a cache miss
        with stages("structured language"):
            g_lang = lazy.build()
    if g_lang is not None:
        with stages("grammar"):
            hard_fst, hard_desc = _with_grammar(hard_text, hard_desc, g_lang, g_desc, lazy)
            hard_text = None
        if opts["leading_space"]:
            space = pynini.accep(" ", token_type="byte")
            hard_fst = optimize(pynini.closure(space, 0, 1) + hard_fst, stage="leading space")
    with stages("trie"):  # the tokenizer's byte trie: built once per process (and kept on disk)
        trie = comp.trie
    with stages("lift"):
        char_fst: bytes | None = None  # (written from the arcs after the tables: not held through the lift)
        if hard_text is not None:  # lifted from its arcs, no [S, 256] table
            arcs = (hard_text.final, hard_text.src, hard_text.byte, hard_text.dst, 0)
            source = hard_text
        else:
            connected = pynini.ACCESSIBLE | pynini.COACCESSIBLE  # type: ignore[attr-defined]
            if hard_fst.properties(connected, False) != connected:  # (a schema's document comes connected: not copied)
                hard_fst = pynini.connect(hard_fst)
            g_lang = None  # (its pynini automaton: a large schema's is hundreds of MB, not needed below)
            box = [hard_fst]
            hard_fst = None
            char_fst = openfst_bytes(box)  # (pynini's automaton let go first)
            big = len(char_fst) > TRIM_ABOVE
            if big:  # (the automata's many small blocks, freed: handed back before the arcs are read)
                trim_heap()
            # the lift reads the arcs, not the [S, 256] table (115 MB at 112k states): read straight
            # from the bytes (numpy; None: not a plain VectorFst), the table built only where it is
            # small enough to be the lift's step table (`char_arcs`)
            read = fst_bytes_to_arcs(char_fst)
            dfa = read if read is not None else fst_to_dfa(pynini.Fst.read_from_string(char_fst))
            if read is not None and big:  # (else kept as OpenFst wrote it: small, or not a plain VectorFst)
                char_fst = None
            read = None
            if big:  # (the reading's temporaries)
                trim_heap()
            source = char_arcs(dfa)
            arcs = (dfa.final, np.asarray(source.src, np.int32), np.asarray(source.byte, np.uint8),
                    np.asarray(source.dst, np.int32), dfa.start)
            del dfa
            source = [source]  # (taken by the lift: these arcs go once it has renumbered them)
        # the arcs' sources, ascending, held through the lift and the tables as a count per state
        # (not one int32 per arc: 38 MB of sp_137's peak), spelled again for the result below;
        # until then ``arcs[1]`` is that count
        src_counts = ascending_counts(arcs[1], len(arcs[0]))
        if src_counts is not None:
            arcs = (arcs[0], src_counts, *arcs[2:])
        allowed = canonical_tokens(comp.tokenizer, vocab, wl) if opts["canonical"] else None
        try:
            fsa = lift(source, trie, vocab.width, allowed_tokens=allowed)
        except LiftSizeError as err:
            hint = lazy.size_hint if lazy is not None and lazy.size_hint else "use a smaller word list or grammar"
            raise SpecError(f"{hard_desc}: its token automaton over {vocab.describe()} would have {err} "
                            f"(token_fsa.MAX_TOKEN_ARCS: gigabytes of memory); {hint}") from None
        del hard_text, hard_fst, source
        if len(fsa.block_tokens) > TRIM_ABOVE:
            # the lift's arrays, freed on its return, stay resident in glibc's heap (those under
            # its mmap threshold, up to 32 MB each: 500 MB on a 22M-arc lift) under the tables'
            # large arrays, which it cannot reuse: handed back first
            trim_heap()
    if not fsa.final.any():
        raise UnsatisfiableConstraintError(
            f"no token sequence of {vocab.describe()} spells any text allowed by {hard_desc}",
            (hard_desc, "tokenizer"),
        )
    with stages("tables"):
        char_state = fsa.char_state
        box = [fsa]  # (taken by `build_tables`: the automaton's token column goes before its dense rows)
        del fsa
        hard = build_tables(box, vocab)
        if src_counts is not None:
            arcs = (arcs[0], np.repeat(np.arange(len(arcs[0]), dtype=np.int32), src_counts), *arcs[2:])
        if char_fst is None:  # (the OpenFst form of the DFA the lift read: after the lift's and the tables' peaks)
            if len(arcs[1]) > TRIM_ABOVE:  # (the tables' freed temporaries, under its slices and their join)
                trim_heap()
            char_fst = vector_fst_bytes(len(arcs[0]), int(arcs[4]), arcs[0], arcs[1], arcs[2], arcs[3])
            if len(char_fst) > TRIM_ABOVE:  # (its slices, joined: handed back)
                trim_heap()
        out = {f"t_{k}": v for k, v in hard.arrays().items()}
        out.update(
            t_start=np.int64(hard.start), t_width=np.int64(hard.width), char_state=char_state,
            char_fst=np.frombuffer(char_fst, np.uint8),
            c_final=arcs[0], c_src=np.asarray(arcs[1], np.int32), c_byte=np.asarray(arcs[2], np.uint8),
            c_dst=np.asarray(arcs[3], np.int32), c_start=np.int64(arcs[4]),
        )
    return out


def unpack_hard(a: dict[str, np.ndarray]):
    """(tables, char fst bytes, char_state, char-DFA arcs) from `compile_hard`."""
    hard = HardTables(
        start=int(a["t_start"]), width=int(a["t_width"]),
        **{k: a[f"t_{k}"] for k in HardTables.ARRAYS + HardTables.OPTIONAL if f"t_{k}" in a}
    )
    arcs = (a["c_final"], a["c_src"], a["c_byte"], a["c_dst"], int(a["c_start"]))
    fst = a["char_fst"]  # (a fresh compile's is a view of its bytes: not copied)
    data = fst.base if isinstance(fst.base, bytes) and len(fst.base) == fst.nbytes else fst.tobytes()
    return hard, data, a["char_state"], arcs


def lang_name(g_desc) -> str:
    """How messages name a grammar language: ``grammar numbers()``, or a structured one as it
    is (``regex '[a-z]+'``, ``choice of 3 strings``, ``json_schema {...}``)."""
    text = str(g_desc)
    return text if text.startswith(("regex ", "choice ", "json_schema ")) else f"grammar {text}"


def _with_grammar(words_text, words_desc, g_lang, g_desc, lazy: LazyLanguage | None) -> tuple[pynini.Fst, str]:
    """(the hard language, its description): the grammar, intersected with the word list if any.
    ``lazy``: where the language came built on demand, what its source said of it."""
    name = lang_name(g_desc)
    g = g_lang if lazy is not None and lazy.optimized else optimize(g_lang, stage=name[:80])
    if g.num_states() == 0:  # (`optimize`'s result is connected: an empty language has no state)
        hint = f": {lazy.empty_hint}" if lazy is not None and lazy.empty_hint else ""
        raise UnsatisfiableConstraintError(f"{name} accepts no text{hint}", (name,))
    if words_text is None:
        return g, name
    words = pynini.Fst.read_from_string(text_dfa_fst_bytes(words_text))
    both = optimize(pynini.intersect(words, g), stage="words & grammar")
    if is_empty(both):
        raise UnsatisfiableConstraintError(
            f"{words_desc} and {name} have no text in common", (words_desc, name)
        )
    return both, f"{words_desc} and {name}"


def fst_bytes(fst: pynini.Fst) -> bytes:
    """The OpenFst binary form (the bytes ``fst.write`` puts in a file, without the file)."""
    return fst.write_to_string()


def is_empty(fst: pynini.Fst) -> bool:
    f = pynini.connect(fst.copy())
    return f.num_states() == 0


def canonical_tokens(tokenizer, vocab: Vocab, wl: WordList | None) -> np.ndarray:
    """Tokens the tokenizer itself uses for the listed words (with and without a leading space),
    for punctuation, digits and spaces."""
    if isinstance(tokenizer, Vocab) or wl is None:
        raise SpecError("canonical=True needs a real tokenizer (not a Vocab) and a word list")
    from tokenizers import Tokenizer

    if isinstance(tokenizer, (str, os.PathLike)):
        from pathlib import Path

        if tokenizer == "default":
            from ...files.default_model import default_tokenizer_dir

            tokenizer = default_tokenizer_dir()
        p = Path(tokenizer)
        tok = Tokenizer.from_file(str(p / "tokenizer.json" if p.is_dir() else p))
    else:
        tok = tokenizer.backend_tokenizer
    from ...fst.wordlist.language import cased_forms, contraction_forms

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
