"""Hypothesis scores and the optimal-stopping certificate (Huang, Zhao & Ma 2017).

A finished hypothesis ``y`` (``|y|`` generated tokens, EOS included) with log-probability
``sc(y)`` is ranked by

- ``"logprob"``: ``sc(y)``;
- ``"reward"`` (bounded length reward): ``sc(y) + r * min(l, |y|)``, ``l`` = a given target length
  or ``ratio * source length``;
- ``"normalize"`` (length normalization): ``sc(y) / |y| ** alpha``.

The search may stop for an input as soon as its n-th best finished score is at least an *upper
bound* on the score of anything a live hypothesis can still become. A live hypothesis with
log-probability ``c <= 0`` after ``t`` tokens, which needs at least ``d`` more text tokens before
it may end, finishes with some length ``m`` in ``[t + d + 1, L]`` (``L`` = max_new_tokens; a
hypothesis that reaches ``L`` tokens in an accepting state finishes there without EOS) and a
log-probability ``<= c`` (log-probabilities are never positive, also when renormalized over the
allowed tokens). So:

- logprob: ``c``;
- reward, ``r >= 0``: ``c + r * min(l, L)`` (Huang et al.'s Eq. 4); ``r < 0``: ``c + r * min(l, t + d + 1)``;
- normalize: ``c / L ** alpha`` (for ``c <= 0`` the quotient grows with the denominator).

These bounds never exceed what the search could later find, so the certificate returns the same
best hypothesis as running to the length limit (modulo beam size), and for ``logprob`` it stops no
later than the classic rule "stop when the best candidate of a step is finished" (Theorem 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

__all__ = ["Scoring"]

Mode = Literal["logprob", "reward", "normalize"]


@dataclass(frozen=True)
class Scoring:
    mode: Mode = "logprob"
    reward: float = 0.0
    alpha: float = 0.0

    @classmethod
    def make(cls, *, length_reward: float | None, length_normalization: float | None) -> "Scoring":
        if length_reward is not None and length_normalization is not None:
            from ...errors import DecodeError

            raise DecodeError("choose one of length_reward and length_normalization, not both")
        if length_reward is not None and length_reward != 0:
            return cls("reward", reward=float(length_reward))
        if length_normalization is not None and length_normalization != 0:
            if length_normalization < 0:
                from ...errors import DecodeError

                raise DecodeError(f"length_normalization must be >= 0 (got {length_normalization})")
            return cls("normalize", alpha=float(length_normalization))
        return cls()

    def rank(self, logp: torch.Tensor, length: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Ranking score of finished hypotheses (``length`` counts EOS)."""
        if self.mode == "reward":
            return logp + self.reward * torch.minimum(target, length.to(logp.dtype))
        if self.mode == "normalize":
            return logp / length.clamp(min=1).to(logp.dtype) ** self.alpha
        return logp

    def upper_bound(
        self, logp: torch.Tensor, t: torch.Tensor, d: torch.Tensor, target: torch.Tensor, max_len: int
    ) -> torch.Tensor:
        """Best ranking score any completion of a live hypothesis can reach (see module docs)."""
        if self.mode == "reward":
            if self.reward >= 0:
                return logp + self.reward * target.clamp(max=float(max_len))
            m = (t + d + 1).clamp(max=max_len).to(logp.dtype)
            return logp + self.reward * torch.minimum(target, m)
        if self.mode == "normalize":
            return logp / float(max_len) ** self.alpha
        return logp
