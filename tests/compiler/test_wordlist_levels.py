"""Every CEFR level on the real Gemma 3 tokenizer: the linear-time word list gives the same
masks as the old determinize/minimize builder, step by step along a 400-token random walk.

The mask a decoder builds (dense row | sparse list, and EOS in final states) is compared, not
state numbers: the two automata may number (and, by a handful, count) their states differently.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.cefr import LEVELS, cefr_words
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.contract.bitmask import tokens_in_bitmask

from wordlist_oracle import word_list_fst_by_optimize

pytestmark = [pytest.mark.integration, pytest.mark.slow]
STEPS = 400


def _mask(tables, state: int) -> tuple[np.ndarray, bool]:
    dense, sparse = tables.mask_row(state)
    ids = np.union1d(tokens_in_bitmask(dense, tables.width), sparse)
    assert np.array_equal(ids, tables.allowed_text_tokens(state))  # the two views agree
    return ids, bool(tables.final[state])


@pytest.mark.parametrize("level", LEVELS)
def test_masks_equal_the_old_builder_along_a_random_walk(gemma, level):
    vocab, _ = gemma
    new = fstbeam.compile_constraints(cefr=level, tokenizer=vocab).hard
    old_dfa = fst_to_dfa(word_list_fst_by_optimize(cefr_words(level)))
    old = build_tables(lift(old_dfa, token_trie(vocab), vocab.width), vocab)
    rng = random.Random(level)
    s_new = s_old = 0
    for step in range(STEPS):
        ids_new, fin_new = _mask(new, s_new)
        ids_old, fin_old = _mask(old, s_old)
        assert fin_new == fin_old and np.array_equal(ids_new, ids_old), (level, step)
        if not len(ids_new) or (fin_new and rng.random() < 0.05):
            s_new = s_old = 0  # the text may end here: start a new one
            continue
        t = int(ids_new[rng.randrange(len(ids_new))])
        s_new, s_old = new.next_state(s_new, t), old.next_state(s_old, t)
        assert s_new >= 0 and s_old >= 0
