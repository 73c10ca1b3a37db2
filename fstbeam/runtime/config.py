"""The search settings: one frozen, typed :class:`SearchConfig`, validated in one place.

``Decoder.generate(prompts, constraints, config=SearchConfig(...), **overrides)``: ``overrides``
are field names of :class:`SearchConfig` and replace the config's values for that call
(``dec.generate(p, beam_size=8)`` keeps working). An unknown name or a bad value raises
:class:`~fstbeam.errors.DecodeError` naming the setting and what it accepts.
"""
from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Sequence, get_args

if TYPE_CHECKING:
    from .search.scoring import Scoring

from ..errors import DecodeError

__all__ = ["SearchConfig", "KernelBackend", "StopAt", "Stopping", "Expand", "ShortlistMode", "resolve_config"]

KernelBackend = Literal["auto", "torch", "cpu-fast", "triton"]
StopAt = Literal["eos", "line", "auto"]
Stopping = Literal["optimal", "exhaustive"]
Expand = Literal["all", "least_advanced"]
ShortlistMode = Literal["auto", "on", "off"]


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DecodeError(f"{name} must be a positive integer (got {value!r})")


def _nonnegative_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DecodeError(f"{name} must be an integer >= 0 (got {value!r})")


def _choice(name: str, value: object, kind: object) -> None:
    allowed = get_args(kind)
    if value not in allowed:
        raise DecodeError(f"{name} must be one of {', '.join(repr(a) for a in allowed)} (got {value!r})")


def _number(name: str, value: object, *, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise DecodeError(f"{name} must be a number{' or None' if optional else ''} (got {value!r})")


def _opt(default: Any, help: str, *, flag: str | None = None, metavar: str | None = None) -> Any:
    """A setting that is also a command-line flag of ``fstbeam generate`` and ``fstbeam batch``
    (``fstbeam.cli.flags.add_search_flags`` builds them from this metadata: one definition)."""
    return field(default=default, metadata={"help": help, "flag": flag, "metavar": metavar})


def _stop_strings(value: object) -> tuple[str, ...]:
    """``stop`` as a tuple of non-empty strings, in their order, each once (a string alone is one)."""
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise DecodeError(f"stop must be a list of strings (got {value!r:.60})")
    out: list[str] = []
    for s in value:
        if not isinstance(s, str) or not s:
            raise DecodeError(f"stop must be a list of non-empty strings, not {s!r:.60}: leave out the empty ones")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise DecodeError(f"stop string {s!r:.60} is not valid UTF-8 text (a lone surrogate)") from None
        if s not in out:
            out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class SearchConfig:
    """How the beam search runs (see docs/decoding.md for each setting).

    ``stop_at``: ``"eos"`` (the model's end-of-sequence ids) or ``"line"`` (those plus the tokens
    made only of newlines: a base model answering a question stops at the end of its line) or
    ``"auto"`` (``"line"`` for a prompt whose last line is a cue such as "German:" after other
    text, as a few-shot prompt ends, else ``"eos"``; `Decoder.stream` decides per prompt).
    ``eos_ids``, when given, replaces the ids ``stop_at`` names. ``stop``: texts that end an
    output inside the search (:mod:`.search.stops`): a hypothesis whose text reaches one finishes
    there, cut right before it (``finish_reason="stop"``), and competes with the other finished
    ones; the outputs returned are distinct texts. ``min_new_tokens`` and
    ``no_repeat_ngram`` only remove options (:mod:`.guards`); ``allow_control_tokens=False`` keeps
    special and control tokens (``<start_of_image>``) out of unconstrained outputs too.
    ``shortlist`` (with ``renormalize=True`` only): compute the logits of the live rows' allowed
    tokens only (:mod:`.shortlist`); ``"auto"`` where it pays, ``"on"`` always, ``"off"`` never.
    Fields made with ``_opt`` carry their help text and are the command-line search flags; task
    presets (`fstbeam.runtime.presets`) set several of them at once.
    """

    beam_size: int = _opt(5, "hypotheses kept per input", flag="--beam")
    max_new_tokens: int = _opt(64, "length limit in tokens")
    nbest: int = _opt(1, "outputs per input (at most the beam size)")
    length_reward: float | None = _opt(None, "bounded length reward r per token (Huang et al. 2017; 0 = rank by "
                                             "log-probability alone)", metavar="R")
    length_normalization: float | None = None  # alpha
    target_length: int | None = _opt(None, "reward up to this many tokens (default: length_ratio x the query's "
                                           "tokens, capped by max_new_tokens)", metavar="N")
    length_ratio: float | None = _opt(None, "reward up to X times the query's tokens (docs/decoding.md)", metavar="X")
    renormalize: bool = _opt(False, "score each step over the allowed tokens only (log-probabilities renormalized); "
                                    "lets the shortlist output layer skip forbidden tokens' logits")
    prune_threshold: float | None = None  # delta
    max_per_parent: int | None = None  # M
    dba: bool = _opt(True, "Dynamic Beam Allocation for must-include phrases (banks by constraint progress)")
    plain_track: bool = True  # with DBA: also run the beam without must-include phrases (runtime/search/tracks.py)
    stopping: Stopping = _opt("optimal", "optimal: stop once no live hypothesis can beat the best finished one; "
                                         "exhaustive: run every input to the length limit")
    batch_size: int = _opt(8, "inputs decoded together")
    refill: float = 1 / 6  # epsilon
    streaming: bool = True
    expand: Expand = "all"
    kernel_backend: KernelBackend = _opt("auto", "masked top-k kernel")
    stop_at: StopAt = _opt("eos", "eos: the model's end-of-sequence ids; line: also a newline (where the "
                                  "constraints allow ending); auto: line where the prompt's last line is a cue "
                                  "('German:', 'Answer:') after other text, else eos")
    eos_ids: tuple[int, ...] | None = None
    stop: tuple[str, ...] = _opt((), "end an output before its first occurrence of this text, inside the search "
                                     "(repeatable; OpenAI's stop)", metavar="TEXT")
    shortlist: ShortlistMode = _opt("auto", "with renormalize: compute the logits of the allowed tokens only "
                                            "(auto: where it pays; on: always; off: never)")
    # output guards (runtime/search/guards.py; runtime/presets.py sets them per task)
    min_new_tokens: int = _opt(0, "EOS only after this many output tokens", metavar="N")
    no_repeat_ngram: int = _opt(0, "no token N-gram twice in an output (0 = off)", metavar="N")
    no_repeat_prompt: bool = _opt(False, "the n-gram guard also counts the prompt's last 64 tokens (no echo of a "
                                         "question)")
    allow_control_tokens: bool = False  # unconstrained decoding may emit special/control tokens
    end_in_top_k: bool = _opt(False, "an output ends where a stop id is among the beam_size best next tokens of its "
                                     "last hypothesis, and beats one the length limit cuts (an ending ranked lower "
                                     "only where none does)")
    # The task preset this config was built from (`presets.search_config` sets it): Decoder takes
    # such a config whole; a config without one gets the decoder's preset under its own settings.
    preset: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _positive_int("beam_size", self.beam_size)
        _positive_int("max_new_tokens", self.max_new_tokens)
        if isinstance(self.nbest, bool) or not isinstance(self.nbest, int) or not 1 <= self.nbest <= self.beam_size:
            raise DecodeError(f"nbest must be between 1 and beam_size={self.beam_size} (got {self.nbest!r})")
        _positive_int("batch_size", self.batch_size)
        if self.max_per_parent is not None:
            _positive_int("max_per_parent", self.max_per_parent)
        for name in ("length_reward", "length_normalization", "target_length", "length_ratio", "prune_threshold"):
            _number(name, getattr(self, name))
        _number("refill", self.refill, optional=False)
        if not 0 <= self.refill < 1:
            raise DecodeError(f"refill (epsilon) must be in [0, 1) (got {self.refill})")
        if self.prune_threshold is not None and not self.prune_threshold >= 0:
            raise DecodeError(f"prune_threshold must be >= 0 (got {self.prune_threshold!r})")
        _choice("stopping", self.stopping, Stopping)
        _choice("expand", self.expand, Expand)
        _choice("kernel_backend", self.kernel_backend, KernelBackend)
        _choice("stop_at", self.stop_at, StopAt)
        _choice("shortlist", self.shortlist, ShortlistMode)
        for name in ("min_new_tokens", "no_repeat_ngram"):
            _nonnegative_int(name, getattr(self, name))
        if self.min_new_tokens > self.max_new_tokens:
            raise DecodeError(f"min_new_tokens={self.min_new_tokens} exceeds max_new_tokens={self.max_new_tokens}: lower it")
        if self.preset is not None and not isinstance(self.preset, str):
            raise DecodeError(f"preset must be a preset name or None (got {self.preset!r})")
        for name in ("renormalize", "dba", "plain_track", "streaming", "allow_control_tokens", "no_repeat_prompt",
                     "end_in_top_k"):
            if not isinstance(getattr(self, name), bool):
                raise DecodeError(f"{name} must be True or False (got {getattr(self, name)!r})")
        if self.shortlist == "on" and not self.renormalize:
            raise DecodeError("shortlist='on' needs renormalize=True: the full softmax needs every logit "
                              "(use renormalize=True, or shortlist='auto'/'off')")
        if self.eos_ids is not None:
            if isinstance(self.eos_ids, (str, bytes)) or not hasattr(self.eos_ids, "__iter__"):
                raise DecodeError(f"eos_ids must be a list of token ids (got {self.eos_ids!r})")
            eos = list(self.eos_ids)
            bad = [e for e in eos if isinstance(e, bool) or not hasattr(e, "__index__")]
            if bad:  # token ids are integers: never 1.5, "x" or True
                raise DecodeError(f"eos_ids must be a list of token ids (ints), not {bad[0]!r}")
            ids = tuple(operator.index(e) for e in eos)
            if not ids:
                raise DecodeError("eos_ids must name at least one token id (or be None for the model's)")
            object.__setattr__(self, "eos_ids", ids)
        object.__setattr__(self, "stop", _stop_strings(self.stop))
        if self.target_length is not None:
            _positive_int("target_length", self.target_length)
        if self.length_reward is not None and self.length_normalization is not None:
            raise DecodeError("choose one of length_reward and length_normalization, not both")
        if self.length_normalization is not None and self.length_normalization < 0:
            raise DecodeError(f"length_normalization must be >= 0 (got {self.length_normalization})")

    @property
    def scoring(self) -> "Scoring":
        from .search.scoring import Scoring  # torch: only when a search runs, not when flags are parsed

        return Scoring.make(length_reward=self.length_reward, length_normalization=self.length_normalization)


_FIELDS = tuple(f.name for f in dataclasses.fields(SearchConfig) if f.name != "preset")


def resolve_config(config: SearchConfig | None, overrides: dict[str, Any]) -> SearchConfig:
    """``config`` (default: ``SearchConfig()``) with ``overrides`` applied, validated."""
    if config is not None and not isinstance(config, SearchConfig):
        raise DecodeError(f"config must be a SearchConfig (got {type(config).__name__}); pass single settings as keywords")
    unknown = sorted(k for k in overrides if k not in _FIELDS)
    if unknown:
        raise DecodeError(f"unknown option(s): {unknown}; the settings are: {', '.join(_FIELDS)}")
    base = config or SearchConfig()
    return dataclasses.replace(base, **overrides) if overrides else base


def stop_ids(config: SearchConfig, model_eos: Sequence[int], newline_ids: Callable[[], Iterable[int]]) -> tuple[int, ...]:
    """End-of-output ids of a call: ``eos_ids`` if given, else the model's (plus newline tokens
    for ``stop_at="line"``; ``newline_ids`` is called only then). ``"auto"`` is decided per prompt
    before this (`Decoder.stream`); here it reads as ``"eos"``."""
    if config.eos_ids is not None:
        return config.eos_ids
    ids = tuple(int(e) for e in model_eos)
    if config.stop_at == "line":
        ids = ids + tuple(int(i) for i in newline_ids() if int(i) not in ids)
    return ids
