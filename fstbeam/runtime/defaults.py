"""Decoding defaults that give answers (``fstbeam generate``; one place for all of them).

Plain beam search on a small base model prefers the shortest output: after "Answer:" the
newline (end of the answer) is often the single most probable token, so 16 of 20 learner
questions got an empty answer, and constrained outputs stopped as soon as the constraints were
met. Huang, Zhao & Ma (2017) fix this "beam search curse" with a *bounded length reward*: a
finished output scores ``log p(y) + r * min(l, |y|)``, ``l`` a target length. Their optimal-
stopping bound stays valid with it (``fstbeam.runtime.scoring``), so the search still stops as
early as it can prove the best output.

- ``LENGTH_REWARD`` (``r`` for continuations): 2.0, tuned as Huang et al. do on dev sentences
  kept apart from the benchmark (``benchmarks/bench_quality.py --tune 0.5,1,1.5,2``, 24 dev
  sentences, unconstrained and with 2 required words): dev chrF 16.4 / 21.1 / 23.5 / 23.8 and
  mean 4.1 / 7.2 / 9.5 / 10.3 words for r = 0.5 / 1 / 1.5 / 2, no loops at any r
  (``benchmarks/results/quality.json``, ``tuning``).
- ``LENGTH_RATIO``: the target length ``l`` is this many times the tokens of the prompt's query
  (:mod:`.length_target`: the last block or line, not few-shot examples before it; capped by
  ``max_new_tokens``): a continuation about as long as what it continues, a translation or a
  sentence about 1.5 times its source line.
- ``QA_LENGTH_RATIO`` (answers, 2.8): a question format's query is the question alone, without
  the template's "Question: ... Answer:" that its count used to include; 2.8 keeps the mean target
  of the 20 dev questions at 19.5 tokens, as before, so the answer tuning below still holds.
- ``NO_REPEAT_NGRAM``: a reward for length invites loops ("I like the beach. I like the
  beach."); no token 4-gram may occur twice in an output.
- ``QA_LENGTH_REWARD`` (``r`` for answers, 1.5): answers have no reference to score, so the
  tuning takes the smallest ``r`` whose answers to the 20 dev questions are never empty or one
  word, do not loop and have a median of at least 10 words (a sentence): at 0.5, 5% were one
  word (median 4); at 1.0 none, but with a median of 7.5 the margin was thin: "What do you eat
  for breakfast?" still got " Eggs." at A1; at 1.5 the median is 13 (2.0: 16). The smallest such
  ``r`` bends the model's ranking least (log-probability per token -1.02 at 1.5, -1.04 at 2.0).
- ``QA_MIN_NEW_TOKENS``: question-answer formats never give an empty answer.
- ``no_repeat_prompt`` (answers only): the n-gram guard also counts the question's 4-grams, so an
  answer does not echo the question ("What did you do yesterday? 1. What was ..."). Off for
  continuations and translation prompts, where copying a name or a term from the prompt is right.

The Python API keeps plain log-probability ranking unless asked (``Decoder.generate(...,
**generate_defaults())``); the ``fstbeam generate`` command uses these defaults.
"""
from __future__ import annotations

__all__ = ["LENGTH_REWARD", "LENGTH_RATIO", "NO_REPEAT_NGRAM", "QA_LENGTH_RATIO", "QA_LENGTH_REWARD", "QA_MIN_NEW_TOKENS",
           "generate_defaults"]

LENGTH_REWARD = 2.0
LENGTH_RATIO = 1.5
NO_REPEAT_NGRAM = 4
QA_LENGTH_REWARD = 1.5
QA_LENGTH_RATIO = 2.8
QA_MIN_NEW_TOKENS = 2


def generate_defaults(*, qa: bool = False) -> dict:
    """Keyword options for ``Decoder.generate`` (``qa``: the prompt asks a question)."""
    opts = {"length_reward": LENGTH_REWARD, "length_ratio": LENGTH_RATIO, "no_repeat_ngram": NO_REPEAT_NGRAM}
    if qa:
        opts.update(length_reward=QA_LENGTH_REWARD, length_ratio=QA_LENGTH_RATIO, min_new_tokens=QA_MIN_NEW_TOKENS,
                    no_repeat_prompt=True)
    return opts
