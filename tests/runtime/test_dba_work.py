"""DBA's counted work does not grow with the number of phrases (Post & Vilar's O(1) in C):
per search step, one masked top-k pass over the logits, one best-in-sets gather, and one model
row per live hypothesis, whatever the number of phrases: at most beam_size per input with plain
DBA, at most 2 * beam_size with the plain track next to it (runtime/search/tracks.py)."""
from __future__ import annotations

import string
import warnings

import pytest

from fstbeam.kernels import dispatch as _kernels
from fstbeam.runtime import Decoder

from rt_helpers import StubLM


@pytest.fixture(scope="module")
def vocab():
    from fstbeam.contract.vocab import Vocab

    letters = string.ascii_lowercase
    toks = ["<eos>"] + list(letters) + [" " + c for c in letters] + [" ", ".", " the", " cat"]
    return Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])


def _forms(i: int) -> list[str]:
    """Three forms of constraint i (AnyOf): a letter and two words starting with it."""
    a, b, c = (string.ascii_lowercase[(i + d) % 26] for d in (0, 1, 2))
    return [a, a + b, a + c]


PHRASE_SETS = {
    "phrases": lambda P: list(string.ascii_lowercase[:P]),
    "anyof3": lambda P: [_forms(i) for i in range(P)],  # P AnyOf constraints of 3 forms each
}


@pytest.mark.parametrize("plain_track", [False, True])
@pytest.mark.parametrize("kind", list(PHRASE_SETS))
def test_counted_work_is_flat_in_the_number_of_phrases(vocab, monkeypatch, kind, plain_track):
    from fstbeam.compiler.api import compile_constraints

    calls = {"topk": 0, "sets": 0}
    real_topk, real_sets = _kernels.masked_topk, _kernels.best_in_sets

    def topk(*a, **k):
        calls["topk"] += 1
        return real_topk(*a, **k)

    def sets(*a, **k):
        calls["sets"] += 1
        return real_sets(*a, **k)

    monkeypatch.setattr(_kernels, "masked_topk", topk)
    monkeypatch.setattr(_kernels, "best_in_sets", sets)
    V, k, n = vocab.width, 4, 3
    width = 2 * k if plain_track else k  # beam entries per input
    lm = StubLM(V, eos=[0], eos_bias=-2.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    per_step = {}
    for P in (1, 2, 4, 8, 16):
        cc = compile_constraints(tokenizer=vocab, phrases=PHRASE_SETS[kind](P))
        assert len(cc.phrases) == P  # one light automaton per constraint, AnyOf included
        calls.update(topk=0, sets=0)
        rows0 = lm.forward_rows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dec.generate([[1], [2], [3]], cc, beam_size=k, max_new_tokens=40, batch_size=n, plain_track=plain_track)
        st = dec.last_stats
        assert calls["topk"] == st.steps and calls["sets"] == st.steps  # one pass of each per step
        rows = lm.forward_rows - rows0 - n  # minus the prefill rows
        assert rows <= (st.steps - 1) * width * n  # one model row per live hypothesis per step
        assert st.logits_elements <= st.steps * width * n * V
        per_step[P] = (rows / max(st.steps - 1, 1), st.logits_elements / st.steps)
        assert sum(r.satisfied for r in res) >= 2, P
    # rows per step do not grow with the number of phrases
    assert max(v[0] for v in per_step.values()) <= width * n
