"""The plain track and constraint-aware ending (runtime/search/tracks.py) on tiny random models.

The guarantee: when the unconstrained beam's output (the same search without the must-include
phrases: same model, word list, scoring, guards and beam size) already meets every phrase, the
constrained search returns an output that scores at least as well. The unconstrained side is the
plain-Python beam search of rt_reference (an independent implementation), and whether its output
meets the phrases is read from the text with fstbeam.fst.text.occurs (not from the automata).
"""
from __future__ import annotations

import random
import warnings

import pytest

from fstbeam.fst.text import occurs
from fstbeam.runtime import Decoder

from rt_helpers import StubLM, tiny_vocab
from rt_reference import reference_search

WORDS = ["a", "b", "ab", "c", "ba"]


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


def _compile(v, **kw):
    from fstbeam.compiler.api import compile_constraints

    return compile_constraints(tokenizer=v, **kw)


def _text(v, ids) -> str:
    return b"".join(v.token_bytes[t] or b"" for t in ids).decode()


def _cases(v, n: int, seed: int):
    """Random (prompt, phrases, word list or not) cases."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        prompt = [rnd.randrange(1, 12) for _ in range(rnd.randrange(1, 4))]
        phrases = rnd.sample(["a", "b", "c", "ab", "ba"], rnd.randrange(1, 4))
        out.append((prompt, phrases, rnd.random() < 0.5))
    return out


def _search_errors(v, k: int, L: int, seed: int, *, plain_track: bool, n: int = 40):
    """(cases where the unconstrained output meets every phrase, of which constrained scored lower)."""
    lm = StubLM(v.width, eos=[0], eos_bias=rnd_bias(seed))
    dec = Decoder(lm, v, eos_ids=[0], device="cpu")
    feasible = errors = 0
    for prompt, phrases, words in _cases(v, n, seed):
        base = dict(words=WORDS) if words else {}
        free_cc = _compile(v, **base) if base else None
        ref, _ = reference_search(lm.logprobs, prompt, free_cc, V=v.width, eos=[0], k=k, L=L, dba=False, vocab=v)
        if not ref:
            continue
        u_lp, u_tok, _ = ref[0]
        if not all(occurs(_text(v, u_tok), p) for p in phrases):
            continue
        feasible += 1
        cc = _compile(v, phrases=phrases, **base)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the reference ranks by log-probability alone: so does this search (not the raw format's preset)
            [r] = dec.generate([prompt], cc, beam_size=k, max_new_tokens=L, plain_track=plain_track, preset="plain")
        assert r.satisfied
        errors += r.logprob < u_lp - 1e-5
    return feasible, errors


def _logits(toks: list[str], vals: dict[str, float]) -> list[float]:
    """One row of a StubLM table: -10 everywhere but the given tokens."""
    x = [-10.0] * len(toks)
    for t, val in vals.items():
        x[toks.index(t)] = val
    return x


def rnd_bias(seed: int) -> float:
    return (-2.0, 0.0, 1.0)[seed % 3]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_no_search_error_where_the_unconstrained_output_is_feasible(vocab, k):
    feasible = 0
    for seed in range(3):
        f, errors = _search_errors(vocab, k, 5, seed, plain_track=True)
        assert errors == 0, (k, seed)
        feasible += f
    assert feasible >= 10  # the guarantee was exercised


def test_without_the_plain_track_dba_makes_search_errors(vocab):
    """The check above can fail: DBA alone (the banks split the beam) loses the unconstrained best."""
    errors = sum(_search_errors(vocab, 2, 5, seed, plain_track=False)[1] for seed in range(3))
    assert errors >= 1


@pytest.mark.parametrize("scoring", [dict(length_reward=1.0, target_length=3), dict(length_normalization=1.0)])
def test_no_search_error_with_length_scores(vocab, scoring):
    """The same guarantee under the length reward and length normalization, against the
    decoder's own unconstrained search (checked against brute force in test_search.py)."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=-1.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    feasible = 0
    for prompt, phrases, words in _cases(vocab, 60, 7):
        base = dict(words=WORDS) if words else {}
        free_cc = _compile(vocab, **base) if base else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            [u] = dec.generate([prompt], free_cc, beam_size=2, max_new_tokens=6, **scoring)
            if not all(occurs(_text(vocab, u.token_ids), p) for p in phrases):
                continue
            feasible += 1
            [c] = dec.generate([prompt], _compile(vocab, phrases=phrases, **base), beam_size=2, max_new_tokens=6, **scoring)
        assert c.satisfied and c.score >= u.score - 1e-5, (prompt, phrases, _text(vocab, u.token_ids), _text(vocab, c.token_ids))
    assert feasible >= 5


def test_optimal_stopping_stays_no_later_than_the_length_limit_result(vocab):
    """With the plain track, the certificate returns the same output as running to the limit."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=0.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    for prompt, phrases, _ in _cases(vocab, 15, 3):
        cc = _compile(vocab, phrases=phrases)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            [a] = dec.generate([prompt], cc, beam_size=2, max_new_tokens=6)
            [b] = dec.generate([prompt], cc, beam_size=2, max_new_tokens=6, stopping="exhaustive")
        assert a.token_ids == b.token_ids and a.steps <= b.steps


def test_forced_word_keeps_the_spacing_the_model_prefers():
    """After "x " the model writes "c" + "at" (no space); the word-completing " cat" would make a
    double space. DBA offers the partial "c" where the model prefers it and its first byte
    differs (a space or not); where the spacing agrees, whole words still come first."""
    from fstbeam.contract.vocab import Vocab

    toks = ["<eos>", "x", " ", " cat", "c", "at", ".", "a"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])
    V = len(toks)
    table = {(1, 2): _logits(toks, {"c": 3.0, " cat": 1.0, ".": 2.0}), (1, 2, 4): _logits(toks, {"at": 3.0, ".": 1.0}),
             (1, 2, 4, 5): _logits(toks, {"<eos>": 3.0}), (1, 2, 3): _logits(toks, {"<eos>": 3.0}),
             (1, 2, 6): _logits(toks, {"<eos>": 3.0})}
    lm = StubLM(V, eos=[0], table=table)
    dec = Decoder(lm, v, eos_ids=[0], device="cpu")
    cc = _compile(v, phrases=["cat"])
    for plain_track in (False, True):
        [r] = dec.generate([[1, 2]], cc, beam_size=1, max_new_tokens=3, plain_track=plain_track)
        assert r.satisfied and _text(v, r.token_ids) == "cat", plain_track
    # the same spacing on both sides (" c" + "at" or " cat"): the whole word wins over the likelier partial
    toks2 = ["<eos>", "x", " c", " cat", "at", "."]
    v2 = Vocab.from_dict({i: t for i, t in enumerate(toks2) if i}, eos_ids=[0])
    row2 = lambda vals: _logits(toks2, vals)  # noqa: E731
    table2 = {(1,): row2({" c": 2.0, " cat": 1.5, ".": 4.0}), (1, 2): row2({"at": 3.0}), (1, 2, 4): row2({"<eos>": 3.0}),
              (1, 3): row2({"<eos>": 3.0}), (1, 5): row2({"<eos>": 3.0})}
    dec2 = Decoder(StubLM(len(toks2), eos=[0], table=table2), v2, eos_ids=[0], device="cpu")
    [r] = dec2.generate([[1]], _compile(v2, phrases=["cat"]), beam_size=1, max_new_tokens=3, plain_track=False)
    assert r.satisfied and list(r.token_ids) == [3]


def test_in_the_middle_of_a_word_the_forced_word_is_not_started_again():
    """After " B" (the start of "Beleg") the model prefers " Be" to "eleg": the model's spacing
    choice is for the start of a word only; mid-word a leading space starts the word again
    (" B Beleg"), so DBA offers the completing "eleg" (WMT en-de: "(Belege B" + " Be" ...)."""
    from fstbeam.contract.vocab import Vocab

    toks = ["<eos>", "x", " B", "eleg", " Be", "leg"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])
    row = lambda vals: _logits(toks, vals)  # noqa: E731
    table = {(1,): row({" B": 3.0}), (1, 2): row({" Be": 3.0, "eleg": 1.0}), (1, 2, 3): row({"<eos>": 3.0}),
             (1, 2, 4): row({"leg": 3.0}), (1, 2, 4, 5): row({"<eos>": 3.0})}
    dec = Decoder(StubLM(len(toks), eos=[0], table=table), v, eos_ids=[0], device="cpu")
    [r] = dec.generate([[1]], _compile(v, phrases=["Beleg"]), beam_size=1, max_new_tokens=4, plain_track=False)
    assert r.satisfied and _text(v, r.token_ids) == " Beleg"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_answers_only_move_towards_their_phrases_as_the_reference_does(vocab, seed):
    """Constraint-aware ending with the closing rule (a hypothesis that would have ended with a
    phrase unmet takes only tokens that bring a phrase closer) makes exactly the choices of the
    plain-Python reference, on cases where the model likes to end early (EOS bias +1)."""
    v = vocab
    lm = StubLM(v.width, eos=[0], eos_bias=1.0)
    dec = Decoder(lm, v, eos_ids=[0], device="cpu")
    for prompt, phrases, words in _cases(v, 12, seed):
        cc = _compile(v, phrases=phrases, **(dict(words=WORDS) if words else {}))
        ref, _ = reference_search(lm.logprobs, prompt, cc, V=v.width, eos=[0], k=2, L=6, vocab=v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            [r] = dec.generate([prompt], cc, beam_size=2, max_new_tokens=6, preset="plain")  # as the reference ranks
        if not ref:
            assert not r.satisfied
            continue
        assert r.satisfied and list(r.token_ids) == ref[0][1] and r.logprob == pytest.approx(ref[0][0], abs=1e-4), (prompt, phrases)


def test_the_plain_track_ends_once_no_plain_member_can_meet_the_phrases_in_time(vocab):
    """With room for nothing but the phrase ("c a b c" takes 4 tokens, max_new_tokens=4), a plain
    member that did not start it cannot become an output that meets it, so it can never be a
    search error: the plain track ends after the first step and costs no model row (it cost 9
    more rows when it ended by the score bound alone). With more room it runs again."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=0.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    cc = _compile(vocab, phrases=["c a b c"])

    def rows(L, plain_track):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            [r] = dec.generate([[3, 5]], cc, beam_size=3, max_new_tokens=L, plain_track=plain_track, stopping="exhaustive")
        assert r.satisfied
        return dec.last_stats.model_rows

    assert rows(4, True) == rows(4, False) == 4  # the prompt row, then the one hypothesis per step
    assert rows(8, True) > rows(8, False)


@pytest.mark.parametrize("k", [2, 3])
def test_a_word_no_token_spells_keeps_its_bank_while_it_is_spelled(k):
    """"Steuert" is " Ste" + "uert" (no token spells it whole): its partial advance " Ste" is
    banked with the word begun, so it keeps a place against the model's better first tokens
    (" Die", " Das": with the words-complete banks it shared bank 0 with them and was pruned, and
    the term came last). The search returns the brute-force best output that meets the phrase."""
    from fstbeam.contract.vocab import Vocab

    from rt_helpers import brute_force

    toks = ["<eos>", "x", " Ste", "uert", " Die", " Das", " Der", " ok"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])
    row = lambda vals: _logits(toks, vals)  # noqa: E731
    table = {(1,): row({" Die": 3.0, " Das": 2.5, " Der": 2.5, " Ste": 1.0}), (1, 2): row({"uert": 6.0}),
             (1, 2, 3): row({" ok": 4.0}), (1, 2, 3, 7): row({"<eos>": 6.0})}
    for first in (4, 5, 6):  # after " Die" / " Das" / " Der": " ok", then the end; " Ste" unlikely
        table[(1, first)] = row({" ok": 4.0})
        table[(1, first, 7)] = row({"<eos>": 5.0})
    lm = StubLM(len(toks), eos=[0], table=table)
    dec = Decoder(lm, v, eos_ids=[0], device="cpu")
    cc = _compile(v, phrases=["Steuert"])
    [(_, best, seq, _)] = brute_force(lm.logprobs, [1], V=len(toks), L=4, eos=[0], matcher_factory=cc.matcher)
    assert _text(v, seq) == " Steuert ok"
    [r] = dec.generate([[1]], cc, beam_size=k, max_new_tokens=4)
    assert list(r.token_ids) == seq and r.logprob == pytest.approx(best, abs=1e-4)
