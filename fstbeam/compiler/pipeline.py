"""What `Compiler.compile_request` does: spec -> character automaton -> token
automaton -> tables, and per-request automata on top of a compiled base.

Word lists and grammars form the *hard* automaton (compiled ahead of time, once per word list).
Phrases, avoid phrases and the prefix are small automata compiled per request in milliseconds
against a per-tokenizer index; their consistency with the hard language is checked here at the
character level so a contradiction is an error at compile time, not an empty beam later.
"""
from __future__ import annotations

import hashlib
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, fields, replace

import numpy as np
import pynini

from ..cancel import checkpoint
from ..contract.compiled import CompiledConstraints
from ..errors import GrammarError, SpecError, UnsatisfiableConstraintError
from .char_dfa import CharDFA, arcs_to_dfa, fst_bytes_to_dfa, fst_to_dfa
from .hard.automaton import fst_bytes, hard_automaton, lang_name
from .hard.cefr import cefr_words
from .light.phrase_dfa import phrase_char_dfa
from .light.satisfy import avoidable, jointly_possible, phrases_possible, reachable_pair
from .limits import check_grammar_phrases
from .request import ConstraintRequest
from .spec import ConstraintSpec, Phrase, WordList, as_phrases, read_word_file

log = logging.getLogger(__name__)

class _Stages:
    """Per-stage timings, and a progress bar on long compiles when asked."""

    def __init__(self, progress: bool):
        from ..files.status import StatusSteps

        self.timings: dict[str, float] = {}
        self.bar = None
        self.status = StatusSteps()  # (one watcher thread for every stage of the compile)
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=0, bar_format="{desc}", leave=False)

    @contextmanager
    def __call__(self, name: str):
        checkpoint()  # (a compile whose request gave up stops here: `fstbeam.cancel`)
        if self.bar is not None:
            self.bar.set_description_str(f"fstbeam: {name}...")
        log.info("stage %s...", name)  # progress in logs too (no terminal: CI, batch jobs)
        t = time.perf_counter()
        if self.bar is not None:
            yield
        else:
            with self.status(f"compiling constraints: {name}"):
                yield
        self.timings[name] = round(time.perf_counter() - t, 4)
        log.info("stage %s: %.3f s", name, self.timings[name])

    def close(self) -> None:
        self.status.close()
        if self.bar is not None:
            self.bar.close()


def _words_spec(words, cefr) -> WordList | None:
    """The word list of a checked request (`ConstraintRequest` owns the checks): a CEFR level, a
    file, or the words themselves."""
    if cefr is not None:
        return WordList(tuple(cefr_words(cefr)), f"cefr:{cefr}")
    if words is None or isinstance(words, WordList):
        return words
    if isinstance(words, (str, os.PathLike)):
        return read_word_file(words)
    return WordList(tuple(w.strip() for w in words if w.strip()), "argument")


def _grammar_language(grammar, grammar_params):
    """(language fst | None, phrases, avoid, description, source hash) for ``grammar``: a
    registered name (with ``grammar_params``), a pynini acceptor, a built grammar (a
    ``GrammarBuild``, e.g. from ``grammars.combine``), or a list of names / builds (combined)."""
    if grammar is None:  # (the request checked grammar_params: a dict, for a grammar given by name)
        return None, (), (), None, None
    if isinstance(grammar, pynini.Fst):
        if grammar.properties(pynini.ACCEPTOR, True) != pynini.ACCEPTOR:
            raise GrammarError("grammar= is a transducer (its input and output labels differ): pass an acceptor, "
                               "e.g. its output projection fst.project('output')")
        h = hashlib.sha256(fst_bytes(grammar)).hexdigest()
        return grammar, (), (), f"custom:{h[:12]}", h
    from .. import grammars

    items = list(grammar) if isinstance(grammar, (list, tuple)) else [grammar]
    if not items:
        raise SpecError("grammar= is an empty list: give a grammar name or build, or None")
    builds = []
    for g in items:
        if isinstance(g, str):
            builds.append(grammars.get(g).build(**(grammar_params or {})))
        elif hasattr(g, "language") and hasattr(g, "cache_key"):
            builds.append(g)
        else:
            raise SpecError(f"grammar= takes a name, a built grammar or a list of them, not {type(g).__name__}")
    build = grammars.combine(builds)
    if len(items) == 1 and isinstance(items[0], str):
        params = grammar_params or {}
        desc = f"{items[0]}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"
    else:
        desc = " & ".join(b.describe() for b in builds)
    language = build.language.copy() if build.language is not None else None
    h = build.source_hash if len(items) == 1 and isinstance(items[0], str) else build.cache_key
    return language, tuple(build.phrases), tuple(build.avoid), desc, h


def _contains_dfa(p: Phrase) -> CharDFA:
    """Character DFA of the texts containing ``p`` (the boundary rule of `fstbeam.fst.text`)."""
    lit = p.text.encode("utf-8")
    return phrase_char_dfa(lit, word_boundary=p.word_boundary, case_sensitive=p.case_sensitive).to_char_dfa()


def _item_dfa(p) -> CharDFA:
    """Character DFA of the texts containing item ``p``: a plain phrase, or an AnyOf /
    sentence-case item (any of its alternatives; its ``text`` "a|b" is only a display form)."""
    from .light.alternatives import is_general, items_char_dfa, stages_of
    from .light.ordered import to_byte_dfa

    return to_byte_dfa(items_char_dfa(stages_of([p]))) if is_general(p) else _contains_dfa(p)


_SIGMA_DFA = CharDFA(np.where(np.arange(256) > 0, 0, -1).astype(np.int32)[None, :], np.ones(1, bool), 0)


def hard_dfa_from_bytes(char_fst: bytes | None) -> CharDFA:
    """The hard character DFA of a loaded artifact (``None``: no hard automaton)."""
    if char_fst is None:
        return _SIGMA_DFA
    read = fst_bytes_to_dfa(char_fst)
    return read if read is not None else fst_to_dfa(pynini.Fst.read_from_string(char_fst))


def _check_request(hard: CharDFA, base_name, phrases, avoid, prefix, *, ordered: int = 0) -> None:
    """Raise UnsatisfiableConstraintError naming the parts that conflict (docs/compiler.md).
    ``ordered``: the first ``ordered`` phrases must occur in order (``compiler.ordered``)."""
    from .light.alternatives import is_general
    from .light.ordered import check_items

    base_name = base_name or "the output"
    start = (prefix or "").encode("utf-8")
    if prefix is not None and hard.run(start) < 0:
        raise UnsatisfiableConstraintError(
            f"no text allowed by {base_name} starts with the prefix {prefix!r}: "
            "check the prefix's spelling or add its words to the list",
            ("prefix", base_name),
        )
    with_prefix = " after the prefix" if prefix else ""
    if ordered > 1:
        check_items(hard, base_name, phrases[:ordered], ordered=True, prefix=prefix)
    check_items(hard, base_name, phrases, ordered=False, prefix=prefix)
    local = _local_checks(hard, phrases) if prefix is None and hard is not _SIGMA_DFA else {}
    for i, p in enumerate(phrases):
        if is_general(p):  # AnyOf / sentence case: checked by check_items
            continue
        if prefix is None and hard is _SIGMA_DFA:  # any text: the phrase itself is one (if it has no NUL)
            ok = "\x00" not in p.text
        elif prefix is None:  # a local check: run the phrase from every state it may start in
            ok = local[i]
        else:  # the phrase may overlap the prefix: search (hard, phrase) state pairs
            ok = reachable_pair(hard, _contains_dfa(p), want_other_final=True, start_text=start)
        if not ok:
            raise UnsatisfiableConstraintError(
                f"phrase {p.text!r} ({p.source}) cannot appear in any text allowed by {base_name}{with_prefix}: "
                "add its words to the list or drop the phrase",
                (f"phrase {p.text!r}", base_name),
            )
    if avoid:
        avoid_dfas = [_contains_dfa(a) for a in avoid]
        if not avoidable(hard, avoid_dfas, start_text=start):
            raise UnsatisfiableConstraintError(
                f"the avoid list {[a.text for a in avoid]} blocks every text allowed by {base_name}{with_prefix}",
                ("avoid", base_name),
            )
        for p in phrases:  # e.g. phrase "the cat" with avoid "cat": every text with one has the other
            if jointly_possible(hard, [_item_dfa(p)], avoid_dfas, start_text=start, witnesses=_witnesses(p, start)) is False:
                raise UnsatisfiableConstraintError(
                    f"phrase {p.text!r} ({p.source}) cannot appear without one of the avoid phrases "
                    f"{[a.text for a in avoid]} in any text allowed by {base_name}{with_prefix}: drop one of them",
                    (f"phrase {p.text!r}", "avoid"),
                )


def _witnesses(p, start: bytes) -> list[bytes]:
    """Texts likely to show at once that item ``p`` can appear without an avoided phrase: each of
    its alternatives alone, after a space, and after the prefix (a word list's texts may start
    with a space; `satisfy.witness` checks each)."""
    texts = getattr(p, "alternatives", None) or (p.text,)
    out = []
    for t in texts:
        b = str(t).encode("utf-8")
        out += [start + b, start + b" " + b]
    return out


def _local_checks(hard: CharDFA, phrases) -> dict[int, bool]:
    """`phrase_possible` of each plain phrase (by position), the phrases of one option set
    walked together (`satisfy.phrases_possible`)."""
    from .light.alternatives import is_general

    groups: dict[tuple[bool, bool], list[int]] = {}
    for i, p in enumerate(phrases):
        if not is_general(p):
            groups.setdefault((p.word_boundary, p.case_sensitive), []).append(i)
    out: dict[int, bool] = {}
    for (wb, cs), idx in groups.items():
        out.update(zip(idx, phrases_possible(hard, [phrases[i].text for i in idx], word_boundary=wb, case_sensitive=cs)))
    return out


def compile_with(comp, request: ConstraintRequest, *, leading_space: bool, progress: bool = False) -> CompiledConstraints:
    """Compile a checked ``request`` (its fields: `fstbeam.compile_constraints`) with ``comp``
    (a `fstbeam.Compiler`: vocabulary, trie, index, caches); ``leading_space``: the request's,
    resolved by the Compiler (``"auto"``: the prompt format's).

    A word list (``words`` / ``cefr``), a grammar and a structured language (``regex``,
    ``choice``, ``json_schema``) form the hard automaton; beside a JSON Schema a word list applies
    to its free string values. A grammar's own phrases and avoid list join the request's; with
    ``ordered`` the request's items (not a grammar's) must occur in the given order."""
    r = request
    words, cefr, phrases, avoid, prefix, grammar = r.words, r.cefr, r.phrases, r.avoid, r.prefix, r.grammar
    grammar_params, canonical, case_variants, digits = dict(r.grammar_params) or None, r.canonical, r.case_variants, r.digits
    stages = _Stages(progress)
    try:
        vocab = comp.vocab
        with stages("words"):
            wl = _words_spec(words, cefr)
        g_lang, g_phr, g_avoid, g_desc, g_hash = _grammar_language(grammar, grammar_params)
        spec_grammar, spec_grammar_hash = g_desc, g_hash  # the grammar alone (the structured part is its own)
        structured = None
        if r.has_structured:  # (imported here: a word list's compile does not pay for the structured compiler)
            from .structured.language import StructuredSpec

            structured = StructuredSpec.of(r.regex, r.choice, r.json_schema, r.json_max_depth, r.json_whitespace, r.json_strict)
        if structured:  # the whole output matches the regex, choice or schema: no space before it
            leading_space = False
        hard_wl = wl
        if structured:
            with stages("structured"):
                hard_wl, g_lang, g_desc, g_hash = structured.join(wl, g_lang, g_desc, g_hash,
                                                                  case_variants=case_variants, digits=digits)
        user, user_avoid = tuple(phrases), tuple(avoid)  # a ConstraintRequest's: checked, limits included
        n_ordered = _ordered_count(r.ordered, user)
        g_name = grammar if isinstance(grammar, str) else g_desc  # a built grammar's repr is its data
        g_phr = as_phrases(g_phr, f"grammar {g_name}")
        g_avoid = as_phrases(g_avoid, f"grammar {g_name}", flatten=True)
        check_grammar_phrases(g_phr, g_avoid, g_name)
        phr, avd = user + g_phr, user_avoid + g_avoid
        spec = ConstraintSpec(
            words=wl, cefr=str(cefr).upper() if cefr else None, phrases=phr, avoid=avd, prefix=prefix,
            grammar=spec_grammar, grammar_hash=spec_grammar_hash, canonical=canonical,
            extra={"case_variants": case_variants, "digits": digits, **({"leading_space": True} if leading_space else {}),
                   **({"ordered": True} if n_ordered else {}), **(structured.describe() if structured else {}),
                   **({"string_words": True} if structured and wl is not None and hard_wl is None else {})},
        )
        if leading_space and wl is None and g_lang is None and not structured:
            raise SpecError(
                "leading_space=True applies to a word list or grammar: give words=, cefr= or grammar= "
                "(phrases, avoid and prefix alone allow any text, spaces included)"
            )
        hard = char_fst = char_state = arcs = None
        dfa, hard_desc = _SIGMA_DFA, None
        if hard_wl is not None or g_lang is not None:
            opts = dict(case_variants=case_variants, digits=digits, leading_space=leading_space, canonical=canonical)
            hard_desc = " and ".join(
                ([f"the word list ({wl.source})"] if wl is not None else []) + ([lang_name(g_desc)] if g_lang is not None else [])
            )
            hard, char_fst, char_state, arcs = hard_automaton(comp, stages, hard_wl, g_lang, g_desc, g_hash, opts)
            if phr or avd or prefix is not None:  # the [S, 256] table only if a check needs it
                dfa = arcs_to_dfa(*arcs)
        with stages("check"):
            _check_request(dfa, hard_desc, phr, avd, prefix, ordered=n_ordered)
        cc = CompiledConstraints(
            vocab=vocab, hard=hard, spec=spec.describe(), spec_hash=spec.spec_hash(),
            char_fst=char_fst, char_state=char_state,
        )
        if phr or avd or prefix is not None:  # the per-tokenizer index (~1 s to build) only if needed
            with stages("phrases"):
                cc = _attach_light(cc, comp.index, phr, avd, prefix, ordered=n_ordered)
        cc = replace(cc, stats={"seconds": stages.timings})
        if arcs is None or dfa is not _SIGMA_DFA:  # (kept beside the object returned: it goes with it)
            comp.remember_hard(cc, dfa)
        else:  # extend() flattens the arcs when it first needs the DFA
            comp.remember_hard_arcs(cc, arcs)
        return cc
    finally:
        stages.close()


def _ordered_count(ordered, user) -> int:
    """How many leading phrases are ordered: all the user's with ``ordered=True``, else none."""
    return len(user) if ordered and len(user) > 1 else 0


def _attach_light(cc: CompiledConstraints, index, phrases, avoid, prefix, *, ordered: int = 0) -> CompiledConstraints:
    """``cc`` with light automata for ``phrases``, ``avoid`` and ``prefix`` added to its own; the
    first ``ordered`` phrases form one ordered automaton (``compiler.ordered``)."""
    if not phrases and not avoid and prefix is None:
        return cc
    from .light.automaton import compile_prefix
    from .light.memo import light_avoid
    from .light.ordered import compile_must_include

    opts = lambda p: dict(word_boundary=p.word_boundary, case_sensitive=p.case_sensitive, source=p.source)  # noqa: E731
    n_user = ordered or len(phrases)
    new = compile_must_include(phrases[:n_user], phrases[n_user:], index, ordered=bool(ordered))
    return replace(
        cc,
        phrases=tuple(cc.phrases) + tuple(new),
        avoid=tuple(cc.avoid) + tuple(light_avoid(p.text, index, **opts(p)) for p in avoid),
        prefix=compile_prefix(prefix, index) if prefix is not None else cc.prefix,
    )


def _as_phrase(a) -> Phrase:
    return Phrase(a.text, word_boundary=a.word_boundary, case_sensitive=a.case_sensitive, source=a.source or "base")


def extend_with(comp, cc: CompiledConstraints, request: ConstraintRequest, *, check: bool = True) -> CompiledConstraints:
    """``cc`` plus what ``request`` adds (`ConstraintRequest.added_to`: its new phrases and avoid
    phrases, and a prefix where ``cc`` has none); shares ``cc``'s tables.

    What ``cc`` already requires stays: its phrases and avoid list (also those a grammar
    supplied) and its prefix. The whole request is checked against the hard automaton.
    ``request.ordered``: ITS phrases must occur in the given order (as in ``compile_with``)."""
    phr, avd, prefix = request.phrases, request.avoid, request.prefix  # checked, limits included
    n_ordered = _ordered_count(request.ordered, phr)
    if cc.vocab.fingerprint != comp.vocab.fingerprint:
        raise SpecError("extend(): the constraints were compiled for another tokenizer than this Compiler's")
    new_prefix = prefix  # (`added_to` gives one only where ``cc`` has none)
    all_prefix = prefix if prefix is not None else (cc.prefix.text if cc.prefix is not None else None)
    if check:
        # AnyOf / ordered automata of the base (``items``) were checked when they were compiled.
        old_phr = tuple(_as_phrase(a) for a in cc.phrases if not a.items)
        old_avd = tuple(_as_phrase(a) for a in cc.avoid)
        name = "the compiled constraints" if cc.char_fst else None
        _check_request(comp.hard_dfa(cc), name, phr + old_phr, old_avd + avd, all_prefix, ordered=n_ordered)
    items = [_spec_item(p) for p in phr]
    spec = dict(
        cc.spec,
        phrases=[*cc.spec.get("phrases", []), *items],
        avoid=[*cc.spec.get("avoid", []), *(asdict(p) for p in avd)],
        prefix=all_prefix,
    )
    if n_ordered:
        spec["ordered"] = True
    key = repr((items, [p.text for p in avd], prefix, bool(n_ordered)))
    h = hashlib.sha256((cc.spec_hash + key).encode()).hexdigest()
    out = _attach_light(replace(cc, spec=spec, spec_hash=h), comp.index, phr, avd, new_prefix, ordered=n_ordered)
    comp.share_hard(cc, out)
    return out


def _spec_item(p) -> dict:
    """How a phrase is recorded in the spec (an AnyOf: its fields, the alternatives a list).
    Shallow (the fields are str, bool and tuples of str): ``asdict`` deep-copies, ~50 us a phrase."""
    d = {f.name: getattr(p, f.name) for f in fields(p)}
    if "alternatives" in d:
        d["alternatives"] = list(d["alternatives"])
    return d
