"""The decoding defaults of the commands, kept for code that imports them: the values live in
the task presets (`fstbeam.runtime.presets`), which every door applies.

How they were chosen: plain beam search on a small base model prefers the shortest output (after
"Answer:" the newline is often the single most probable token: 16 of 20 learner questions got an
empty answer). Huang, Zhao & Ma (2017) fix this "beam search curse" with a bounded length reward,
``log p(y) + r * min(l, |y|)``; their optimal-stopping bound stays valid with it.

- ``LENGTH_REWARD`` (continuations): 2.0, tuned on 24 dev sentences kept apart from the benchmark
  (``benchmarks/bench_quality.py --tune``): dev chrF 16.4 / 21.1 / 23.5 / 23.8 for r = 0.5 / 1 /
  1.5 / 2, no loops at any r (``benchmarks/results/quality.json``, ``tuning``).
- ``QA_LENGTH_REWARD`` (answers): 1.5, the smallest r whose answers to the 20 dev questions are
  never empty or one word, do not loop and have a median of at least 10 words.
- ``LENGTH_RATIO``: the target length is this many times the query's tokens (`.length_target`:
  the last block or line of the prompt, never few-shot examples before it).
- ``QA_LENGTH_RATIO`` (answers, 2.8): a question format's query is the question alone; 2.8 keeps
  the mean target of the 20 dev questions at 19.5 tokens, as before, so the answer tuning holds.
- ``NO_REPEAT_NGRAM``: no token 4-gram twice in an output; ``QA_MIN_NEW_TOKENS``: no empty answer.
"""
from __future__ import annotations

from .presets import LENGTH_RATIO, LENGTH_REWARD, NO_REPEAT_NGRAM, PRESETS, QA_LENGTH_RATIO, QA_LENGTH_REWARD, QA_MIN_NEW_TOKENS

__all__ = ["LENGTH_REWARD", "LENGTH_RATIO", "NO_REPEAT_NGRAM", "QA_LENGTH_RATIO", "QA_LENGTH_REWARD", "QA_MIN_NEW_TOKENS",
           "generate_defaults"]


def generate_defaults(*, qa: bool = False) -> dict:
    """Keyword options of the ``continuation`` (or, with ``qa``, ``answer``) preset, without its
    ``stop_at``; prefer ``Decoder.generate(..., preset="auto")``."""
    opts = dict(PRESETS["answer" if qa else "continuation"])
    opts.pop("stop_at", None)
    return opts
