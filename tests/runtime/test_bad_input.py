"""Bad input: clear errors, or flagged results that leave the rest of the batch untouched."""
from __future__ import annotations

import warnings

import pytest

from fstbeam.errors import DecodeError, TokenizerMismatchError
from fstbeam.runtime import Decoder

from rt_helpers import StubLM, tiny_llama, tiny_vocab


@pytest.fixture(scope="module")
def setup():
    from fstbeam.compiler.api import compile_constraints

    v = tiny_vocab()
    dec = Decoder(StubLM(v.width, eos=[0], max_positions=12), v, eos_ids=[0], device="cpu")
    return v, dec, compile_constraints


def test_tokenizer_artifact_mismatch(setup):
    v, dec, compile_constraints = setup
    other = tiny_vocab(tokens=["<eos>", "a", "b", " ", "ab", " a", " b", "c", ".", " c", "ba", "b ", "<x>"])
    cc = compile_constraints(tokenizer=other, words=["a", "b"])
    with pytest.raises(TokenizerMismatchError, match="token 11"):
        dec.generate([[1]], cc)
    wider = tiny_vocab(tokens=[*["<eos>", "a", "b"], "c", "<x>"])
    with pytest.raises(TokenizerMismatchError, match="logits"):
        dec.generate([[1]], compile_constraints(tokenizer=wider, words=["a"]))


def test_prompt_longer_than_context_is_flagged_others_unaffected(setup):
    v, dec, _ = setup
    long_prompt = [1] * 10  # + max_new_tokens=4 > 12 positions
    with pytest.warns(UserWarning, match="context"):
        res = dec.generate([[2], long_prompt, [3]], beam_size=2, max_new_tokens=4)
    assert res[1].error and "context" in res[1].error and res[1].finish_reason == "error" and not res[1].satisfied
    assert res[0].error is None and res[2].error is None
    assert res[0].token_ids == dec.generate([[2]], beam_size=2, max_new_tokens=4)[0].token_ids


def test_empty_prompt_is_flagged(setup):
    v, dec, _ = setup
    with pytest.warns(UserWarning):
        res = dec.generate([[], [1]], beam_size=2, max_new_tokens=3)
    assert res[0].error and "empty" in res[0].error and res[1].error is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(beam_size=0), "beam_size"),
        (dict(beam_size=-2), "beam_size"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(nbest=3, beam_size=2), "nbest"),
        (dict(batch_size=0), "batch_size"),
        (dict(refill=1.0), "refill"),
        (dict(stopping="sometimes"), "stopping"),
        (dict(length_reward=1.0, length_normalization=1.0), "length"),
        (dict(max_per_parent=0), "max_per_parent"),
        (dict(frobnicate=True), "unknown option"),
    ],
)
def test_bad_settings_raise(setup, kwargs, match):
    v, dec, _ = setup
    with pytest.raises(DecodeError, match=match):
        dec.generate([[1]], **kwargs)


def test_empty_prompt_list_and_wrong_constraint_count(setup):
    v, dec, compile_constraints = setup
    with pytest.raises(DecodeError, match="no prompts"):
        dec.generate([])
    cc = compile_constraints(tokenizer=v, words=["a"])
    with pytest.raises(DecodeError, match="one per prompt"):
        dec.generate([[1], [2]], [cc])


def test_phrases_that_cannot_fit_are_flagged_per_input(setup):
    v, dec, compile_constraints = setup
    long_phrase = compile_constraints(tokenizer=v, phrases=["a b a b a b a"])
    prefix = compile_constraints(tokenizer=v, prefix="a b c a b c")
    with pytest.warns(UserWarning, match="max_new_tokens=3 is too small"):
        res = dec.generate([[1], [2], [3]], [long_phrase, None, prefix], beam_size=2, max_new_tokens=3)
    assert not res[0].satisfied and not res[2].satisfied
    assert res[1].satisfied and res[1].error is None
    assert any("phrase 'a b a b a b a'" in w for w in res[0].warnings)
    assert any("prefix" in w for w in res[2].warnings)
    # the partial outputs still respect the constraints that can be respected (prefix so far)
    text = b"".join(v.token_bytes[t] for t in res[2].token_ids)
    assert b"a b c a b c".startswith(text)


def test_unsatisfiable_at_compile_time_is_a_compile_error(setup):
    from fstbeam.errors import UnsatisfiableConstraintError

    v, _, compile_constraints = setup
    with pytest.raises(UnsatisfiableConstraintError):
        compile_constraints(tokenizer=v, phrases=["zzz"])


def test_string_prompts_with_a_model_and_no_tokenizer_fail_clearly():
    v = tiny_vocab()
    dec = Decoder(tiny_llama(v.width), v, eos_ids=[0], device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = dec.generate(["hello"])
    assert r.error and "tokenizer" in r.error


def test_prompt_token_id_outside_the_vocabulary_flags_only_that_input(setup):
    v, dec, _ = setup
    with pytest.warns(UserWarning):
        res = dec.generate([[1, v.width + 5], [1], [-1]], beam_size=2, max_new_tokens=3)
    assert res[0].error and "outside the model's vocabulary" in res[0].error
    assert res[2].error and "outside" in res[2].error
    assert res[1].error is None
    assert res[1].token_ids == dec.generate([[1]], beam_size=2, max_new_tokens=3)[0].token_ids


@pytest.mark.parametrize("eos", [[10**6], [-1], ["x"], [1.5]])
def test_bad_eos_ids_are_decode_errors(setup, eos):
    v, dec, _ = setup
    with pytest.raises(DecodeError, match="EOS id|eos_ids"):
        dec.generate([[1]], beam_size=2, max_new_tokens=3, eos_ids=eos)
    with pytest.raises(DecodeError, match="EOS id|eos_ids"):
        Decoder(StubLM(v.width, eos=[0], max_positions=12), v, eos_ids=eos, device="cpu")
