"""best_in_sets (DBA's best token per unmet phrase) against the float64 oracle."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from kernel_oracle import exact64, logsumexp64, oracle_best_in_sets, pack_rows

from fstbeam.kernels import best_in_sets


def check(logits, allowed_states, row_state, token_sets, rng):
    bitmask = pack_rows(allowed_states, rng)
    x64 = exact64(logits)
    lse64 = logsumexp64(x64)
    lse = torch.from_numpy(lse64.astype(np.float32))
    tokens, logprobs = best_in_sets(logits, bitmask, row_state, token_sets, lse)
    want_tokens, want_logprobs = oracle_best_in_sets(x64, allowed_states[row_state.numpy()], token_sets.numpy(),
                                                     lse.double().numpy())
    assert tokens.dtype == torch.int64 and logprobs.dtype == torch.float32
    np.testing.assert_array_equal(tokens.numpy(), want_tokens)
    np.testing.assert_allclose(logprobs.numpy(), want_logprobs, rtol=1e-6, atol=2e-6)
    return tokens, logprobs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("vocab", [33, 128001])
def test_random_sets_with_padding_and_duplicates(dtype, vocab):
    rng = np.random.default_rng(vocab)
    num_rows, num_sets, set_size = 6, 5, 7
    logits = torch.from_numpy(rng.standard_normal((num_rows, vocab)).astype(np.float32)).to(dtype)
    allowed = rng.random((3, vocab)) < 0.5
    row_state = torch.from_numpy(rng.integers(0, 3, num_rows))
    sets = rng.integers(0, vocab, (num_rows, num_sets, set_size))
    sets[rng.random(sets.shape) < 0.3] = -1  # padding
    sets[:, 0, :] = sets[:, 0, :1]  # one set repeats a single token
    sets[:, 1, :] = -1  # an empty set
    check(logits, allowed, row_state, torch.from_numpy(sets), rng)


def test_ties_minus_inf_and_disallowed_tokens():
    rng = np.random.default_rng(0)
    logits = torch.tensor([[1.0, 3.0, 3.0, -math.inf, 5.0, 0.0, -0.0, 2.0]])
    allowed = np.array([[True, True, True, True, False, True, True, True]])
    sets = torch.tensor([[
        [2, 1, 0],  # tie at 3.0 between ids 1 and 2 -> 1
        [4, 3, -1],  # 4 is disallowed, 3 is -inf -> none
        [6, 5, -1],  # -0.0 == +0.0 -> lower id 5
        [4, 7, 4],  # the disallowed best is skipped -> 7
    ]])
    tokens, logprobs = check(logits, allowed, torch.zeros(1, dtype=torch.int64), sets, rng)
    assert tokens.tolist() == [[1, -1, 5, 7]]
    assert logprobs[0, 1].item() == -math.inf


@pytest.mark.parametrize("shape", [(3, 0, 4), (3, 2, 0)])
def test_empty_set_dimensions(shape):
    rng = np.random.default_rng(1)
    logits = torch.randn(3, 50)
    sets = torch.zeros(shape, dtype=torch.int64)
    tokens, logprobs = check(logits, np.ones((1, 50), bool), torch.zeros(3, dtype=torch.int64), sets, rng)
    assert tokens.shape == shape[:2] and bool(tokens.eq(-1).all())


def test_strided_logits():
    rng = np.random.default_rng(2)
    logits = torch.randn(4, 300)[:, 1::3]  # [4, 100], column stride 3
    sets = torch.from_numpy(rng.integers(-1, 100, (4, 3, 5)))
    check(logits, rng.random((2, 100)) < 0.4, torch.tensor([0, 1, 1, 0]), sets, rng)
