"""Decoding defaults that give answers (``fstbeam generate``; one place for all of them).

Plain beam search on a small base model prefers the shortest output: after "Answer:" the
newline (end of the answer) is often the single most probable token, so 16 of 20 learner
questions got an empty answer, and constrained outputs stopped as soon as the constraints were
met. Huang, Zhao & Ma (2017) fix this "beam search curse" with a *bounded length reward*: a
finished output scores ``log p(y) + r * min(l, |y|)``, ``l`` a target length. Their optimal-
stopping bound stays valid with it (``fstbeam.runtime.scoring``), so the search still stops as
early as it can prove the best output.

- ``LENGTH_REWARD`` (``r``): 1.0 is provisional. ``benchmarks/bench_quality.py --tune R,R,...``
  tunes it on dev prompts kept apart from the benchmark items, but that run has not been done yet
  (the shared machine was too slow).
- ``LENGTH_RATIO``: the target length ``l`` is this many times the prompt's tokens (capped by
  ``max_new_tokens``): an answer about as long as a one-line question, a continuation about as
  long as what it continues.
- ``NO_REPEAT_NGRAM``: a reward for length invites loops ("I like the beach. I like the
  beach."); no token 4-gram may occur twice in an output.
- ``QA_LENGTH_REWARD``: answers to a question get a larger ``r`` (2.0). With 1.0 the default model
  still answered "What do you eat for breakfast?" with " Eggs."; with 2.0 it answered with a
  sentence on 6 of 6 dev questions, unconstrained and at A1 (checked by hand, not yet tuned on the
  dev set either).
- ``QA_MIN_NEW_TOKENS``: question-answer formats never give an empty answer.
- ``no_repeat_prompt`` (answers only): the n-gram guard also counts the question's 4-grams, so an
  answer does not echo the question ("What did you do yesterday? 1. What was ..."). Off for
  continuations and translation prompts, where copying a name or a term from the prompt is right.

The Python API keeps plain log-probability ranking unless asked (``Decoder.generate(...,
**generate_defaults())``); the ``fstbeam generate`` command uses these defaults.
"""
from __future__ import annotations

__all__ = ["LENGTH_REWARD", "LENGTH_RATIO", "NO_REPEAT_NGRAM", "QA_LENGTH_REWARD", "QA_MIN_NEW_TOKENS", "generate_defaults"]

LENGTH_REWARD = 1.0
LENGTH_RATIO = 1.5
NO_REPEAT_NGRAM = 4
QA_LENGTH_REWARD = 2.0
QA_MIN_NEW_TOKENS = 2


def generate_defaults(*, qa: bool = False) -> dict:
    """Keyword options for ``Decoder.generate`` (``qa``: the prompt asks a question)."""
    opts = {"length_reward": LENGTH_REWARD, "length_ratio": LENGTH_RATIO, "no_repeat_ngram": NO_REPEAT_NGRAM}
    if qa:
        opts.update(length_reward=QA_LENGTH_REWARD, min_new_tokens=QA_MIN_NEW_TOKENS, no_repeat_prompt=True)
    return opts
