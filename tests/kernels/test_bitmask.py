"""Bitmask convention: bit j of word i (as uint32, value 1 << j) = token 32*i + j allowed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fstbeam.kernels import bitmask as bm


def hand_packed(mask: np.ndarray) -> np.ndarray:
    """The convention spelled out with Python ints, one bit at a time."""
    vocab = mask.shape[-1]
    width = (vocab + 31) // 32
    out = np.zeros(mask.shape[:-1] + (width,), np.int32)
    for index in np.ndindex(mask.shape[:-1]):
        for word in range(width):
            value = 0
            for bit in range(32):
                token = 32 * word + bit
                if token < vocab and mask[index + (token,)]:
                    value |= 1 << bit
            out[index + (word,)] = value - 2**32 if value >= 2**31 else value
    return out


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 64, 100])
def test_pack_matches_the_convention_and_round_trips(vocab):
    rng = np.random.default_rng(vocab)
    mask = rng.random((3, 2, vocab)) < 0.5
    words = bm.pack_bool_mask(mask)
    assert words.dtype == np.int32 and words.shape == (3, 2, bm.bitmask_width(vocab))
    np.testing.assert_array_equal(words, hand_packed(mask))
    np.testing.assert_array_equal(bm.unpack_bitmask(words, vocab), mask)


def test_bit_31_makes_the_word_negative_and_bit_0_is_token_0():
    mask = np.zeros(64, bool)
    mask[[0, 31, 32]] = True
    words = bm.pack_bool_mask(mask)
    assert words.tolist() == [-(2**31) + 1, 1]


def test_unpack_ignores_bits_beyond_the_vocabulary():
    words = np.array([-1, -1], np.int32)  # all 64 bits set
    assert bm.unpack_bitmask(words, 40).tolist() == [True] * 40


@pytest.mark.parametrize("vocab", [1, 33, 1000])
def test_torch_twins_match_numpy(vocab):
    rng = np.random.default_rng(0)
    mask = rng.random((4, vocab)) < 0.3
    words = bm.pack_bool_mask(mask)
    torch_words = bm.pack_bool_mask_torch(torch.from_numpy(mask))
    assert torch_words.dtype == torch.int32
    np.testing.assert_array_equal(torch_words.numpy(), words)
    garbage = torch.from_numpy(words.copy())
    if vocab % 32:
        garbage[:, -1] |= torch.tensor(-1 << (vocab % 32), dtype=torch.int32)  # bits past V
    np.testing.assert_array_equal(bm.unpack_bitmask_torch(garbage, vocab).numpy(), mask)


def test_set_bits_and_tokens_in_bitmask():
    row = np.zeros(bm.bitmask_width(70), np.int32)
    assert bm.set_bits(row, [0, 31, 31, 69, 32]) is row  # in place, duplicates fine
    assert row.tolist() == [-(2**31) + 1, 1, 32]
    assert bm.tokens_in_bitmask(row, 70).tolist() == [0, 31, 32, 69]
    with pytest.raises(ValueError, match="outside the row's 96 bits"):
        bm.set_bits(row, [96])


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match=r"int32 \[..., ceil\(V/32\)\] = \[..., 2\]"):
        bm.unpack_bitmask(np.zeros(3, np.int32), 40)
    with pytest.raises(ValueError, match="bool array"):
        bm.pack_bool_mask(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="vocab_size"):
        bm.bitmask_width(-1)


def test_importing_bitmask_does_not_import_torch():
    # The compiler packs tables with this module and must run without torch.
    code = (
        "import sys\n"
        "import fstbeam.kernels.bitmask as bm\n"
        "import numpy as np\n"
        "bm.pack_bool_mask(np.ones(40, bool))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "import fstbeam.kernels\n"
        "assert 'torch' not in sys.modules, 'fstbeam.kernels imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


@pytest.mark.parametrize("vocab", [33, 100, 257])
def test_fill_state_row_is_the_dense_row_plus_the_sparse_tokens(vocab):
    """`fill_state_row` (compiled) against the convention spelled out bit by bit: each state's
    mask is its dense row's tokens together with its sparse tokens (several per word, bit 31 too)."""
    from types import SimpleNamespace

    from fstbeam.kernels.cpu_bits import fill_state_row

    rng = np.random.default_rng(vocab)
    rows = rng.random((3, vocab)) < 0.3
    sparse = [np.array([], np.int64), np.array(sorted({0, 31, 32, vocab - 1})), np.sort(rng.choice(vocab, 12, replace=False))]
    hard = SimpleNamespace(
        dense_masks=bm.pack_bool_mask(rows), state_dense_row=np.array([2, 0, 1], np.int32),
        state_sparse_ptr=np.cumsum([0] + [len(s) for s in sparse]).astype(np.int64),
        state_sparse_tokens=np.concatenate(sparse).astype(np.int32),
    )
    out = np.full(bm.bitmask_width(vocab), -1, np.int32)  # stale bits must be overwritten
    for state in range(3):
        want = rows[hard.state_dense_row[state]].copy()
        want[sparse[state]] = True
        np.testing.assert_array_equal(fill_state_row(hard, state, out), hand_packed(want))
