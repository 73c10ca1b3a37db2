"""Named search presets: what each kind of task needs beyond plain beam search, in one place.

Every door applies the same preset for the same prompt format (`preset_for_format`): ``fstbeam
generate``, ``fstbeam batch``, files of inputs, the server and the Python API
(``Decoder.generate`` without ``preset=`` or ``config=``; ``preset="plain"`` ranks by
log-probability alone). Flags and keywords given by the user override a preset's values.

- ``plain``: log-probability ranking, nothing else (``preset="plain"``).
- ``continuation`` (raw text and templates): Huang et al.'s (2017) bounded length reward with
  ``r = LENGTH_REWARD`` up to ``LENGTH_RATIO`` times the query's tokens (`.length_target`), no
  token 4-gram twice, and an output ends only where the model ranks a stop id among its
  ``beam_size`` best next tokens (``end_in_top_k``): plain beam search on a small model prefers
  the shortest output, a reward for length invites loops, and once the reward's target is
  filled an ending the model ranks far down ("... but we all gaze" + newline, rank 168) is cheaper
  than finishing the sentence. ``stop_at="auto"``: a prompt whose last line is a cue after other
  text ("English: ...\nGerman:", a template ending in "\nAnswer:") is answered in one line, as
  a few-shot prompt's examples are; any other prompt is continued until EOS.
- ``answer`` (``--format qa``, chat): a smaller reward (``QA_LENGTH_REWARD``), never an empty
  answer (``min_new_tokens``), no echo of the question (``no_repeat_prompt``), and the answer ends
  with its line (``stop_at="line"``): a base model otherwise goes on to invent the next question.
- ``translation``: as ``continuation``, ending at the end of the line (one segment per line).

The values were tuned on held-out dev data (docs/decoding.md, "Defaults").
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import DecodeError
from .config import SearchConfig

__all__ = ["PRESETS", "preset_for_format", "search_config", "config_overrides", "LENGTH_REWARD", "LENGTH_RATIO", "NO_REPEAT_NGRAM",
           "QA_LENGTH_RATIO", "QA_LENGTH_REWARD", "QA_MIN_NEW_TOKENS"]

LENGTH_REWARD = 2.0
LENGTH_RATIO = 1.5
NO_REPEAT_NGRAM = 4
QA_LENGTH_REWARD = 1.5
QA_LENGTH_RATIO = 2.8  # a question's query is the question alone (runtime/defaults.py)
QA_MIN_NEW_TOKENS = 2

_CONTINUATION = {"length_reward": LENGTH_REWARD, "length_ratio": LENGTH_RATIO, "no_repeat_ngram": NO_REPEAT_NGRAM,
                 "end_in_top_k": True, "stop_at": "auto"}

#: name -> the SearchConfig fields the preset sets (the rest keep SearchConfig's defaults).
PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "plain": MappingProxyType({}),
    "continuation": MappingProxyType(dict(_CONTINUATION)),
    "answer": MappingProxyType(dict(_CONTINUATION, length_reward=QA_LENGTH_REWARD, length_ratio=QA_LENGTH_RATIO,
                                    min_new_tokens=QA_MIN_NEW_TOKENS,
                                    no_repeat_prompt=True, stop_at="line")),
    "translation": MappingProxyType(dict(_CONTINUATION, stop_at="line")),
})

#: Settings that only make sense with a length reward: ``length_reward=0`` drops them too
#: (plain log-probability ranking), unless given explicitly.
_WITH_REWARD = ("length_ratio", "no_repeat_ngram", "no_repeat_prompt", "end_in_top_k")


def preset_for_format(prompt_format: str, continues_text: bool = True) -> str:
    """The preset every door uses for a prompt format: ``answer`` for ``qa`` and chat prompts,
    ``continuation`` for raw text and other templates (which ends at a line where the prompt's
    last line is a cue, ``stop_at="auto"``)."""
    if prompt_format == "qa" or prompt_format == "chat" or not continues_text:
        return "answer"
    return "continuation"


def config_overrides(config: SearchConfig | None) -> dict[str, Any]:
    """The settings of ``config`` that differ from ``SearchConfig()``'s: what a user's config
    says over a preset, as keywords do (``SearchConfig(beam_size=8)`` is ``beam_size=8``)."""
    if config is None:
        return {}
    if not isinstance(config, SearchConfig):
        raise DecodeError(f"config must be a SearchConfig (got {type(config).__name__}); pass single settings as keywords")
    mine, base = vars(config), vars(SearchConfig())
    return {f.name: mine[f.name] for f in dataclasses.fields(SearchConfig)
            if f.name != "preset" and mine[f.name] != base[f.name]}


def search_config(preset: str | None = None, overrides: Mapping[str, Any] | None = None,
                  base: SearchConfig | None = None) -> SearchConfig:
    """``base`` (default ``SearchConfig()``) with the preset's values, then ``overrides`` (the
    user's flags or keywords; ``None`` values are ignored), validated."""
    name = preset or "plain"
    if name not in PRESETS:
        raise DecodeError(f"unknown preset {name!r}: use one of {', '.join(PRESETS)}")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    values = dict(PRESETS[name])
    if given.get("length_reward") == 0:
        for k in _WITH_REWARD:
            values.pop(k, None)
    if given.get("length_normalization") is not None:  # the user's other length scoring replaces the reward
        values.pop("length_reward", None)
        values.pop("length_ratio", None)
    values.update(given)
    max_new = values.get("max_new_tokens", (base or SearchConfig()).max_new_tokens)
    if "min_new_tokens" not in given and "min_new_tokens" in values:  # a preset never exceeds the limit asked for
        values["min_new_tokens"] = min(values["min_new_tokens"], max_new)
    known = [f.name for f in dataclasses.fields(SearchConfig) if f.name != "preset"]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise DecodeError(f"unknown option(s): {unknown}; the settings are: {', '.join(known)}")
    return dataclasses.replace(base or SearchConfig(), **values, preset=name)
