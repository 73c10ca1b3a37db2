"""Where an output ends, decided per prompt, and why an output is empty.

``stop_at="auto"`` (the ``continuation`` preset, raw text and templates): a prompt whose last
line is a cue after other text ("English: ...\\nGerman:", "Question: ...\\nAnswer:") asks for a
one-line answer, as the examples of a few-shot prompt have, so its output ends at its line;
any other prompt is continued until EOS. Without this a raw translation prompt runs on into a
made-up next example ("Bitte Passwort eingeben.\\nFrench: Veuillez ...").

An empty output is never returned in silence: :func:`empty_reason` says why it is empty.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from ..errors import DecodeError
from .search.length_target import ends_with_cue

if TYPE_CHECKING:
    from .config import SearchConfig, StopAt

__all__ = ["ends_at_line", "numbered", "runs_by_stop", "empty_reason", "distinct", "hypotheses"]


def ends_at_line(decoder: Any, prompt: Any) -> bool:
    """Whether ``stop_at="auto"`` ends this prompt's output at its line: the prompt as the model
    reads it (formatted) ends with a cue line after other text (`.length_target.ends_with_cue`)."""
    fmt = decoder.prompt_format
    if isinstance(prompt, str):
        if not decoder.continues_text:  # a chat turn: the answer preset ends it at its line anyway
            return False
        text = prompt if fmt in ("raw", "auto") else fmt.replace("{prompt}", prompt)
        return ends_with_cue(text.encode("utf-8", "replace"))
    try:
        tb = decoder.vocab.token_bytes
        return ends_with_cue(b"".join(tb[t] or b"" for t in prompt if 0 <= t < len(tb)))
    except (DecodeError, TypeError, ValueError):  # no vocabulary, or not ids: the request reports it
        return False


def numbered(prompts: Iterable[Any], constraints: Any, shared: bool) -> Iterator[tuple[int, Any, Any]]:
    """``(index, prompt, constraints)`` of each prompt, lazily: one constraint set for all
    (``shared``) or one per prompt."""
    cons_iter = None if shared else iter(constraints)
    missing = object()
    for i, p in enumerate(prompts):
        cc = constraints if shared else next(cons_iter, missing)  # type: ignore[arg-type]
        if cc is missing:
            raise DecodeError(f"constraints ran out at prompt {i}: give one constraint set (or None) per prompt")
        yield i, p, cc


def runs_by_stop(items: Iterator[tuple[int, Any, Any]], config: SearchConfig, decide: Callable[[Any], bool]
                 ) -> Iterator[tuple[SearchConfig, Iterator[tuple[int, Any, Any]]]]:
    """``(config, items)`` runs for ``stop_at="auto"``: consecutive items whose prompts end the
    same way share a run (``stop_at`` "line" where ``decide(prompt)``, else "eos"). Items are
    read as the runs are consumed (one at a time, in order), never all at once: a stream of
    inputs stays a stream, and a corpus of one kind of prompt is one run."""
    it = iter(items)
    head = [next(it, None)]

    def stop_of(item: tuple[int, Any, Any]) -> StopAt:
        return "line" if decide(item[1]) else "eos"

    while head[0] is not None:
        stop = stop_of(head[0])

        def run(stop: StopAt = stop) -> Iterator[tuple[int, Any, Any]]:
            while head[0] is not None and stop_of(head[0]) == stop:
                item = head[0]
                head[0] = None
                yield item
                head[0] = next(it, None)  # the next input, read when the search asks for it

        yield replace(config, stop_at=stop), run()


def empty_reason(finish_reason: str, config: SearchConfig | None = None) -> str:
    """Why the best output has no text (a warning on the result, shown by every door);
    ``config`` (the search's) names the way out where it is known."""
    if finish_reason == "incomplete":
        return "the output is empty: no output that meets the constraints was found within max_new_tokens"
    if finish_reason == "length":
        return "the output is empty: its tokens have no text (control tokens) and it was cut at max_new_tokens"
    if config is None:
        return "the output is empty: the model ranked an end-of-output token first; min_new_tokens=1 forbids it"
    what = "an end-of-output token (EOS" + (" or a newline: stop_at='line')" if config.stop_at == "line" else ")")
    if config.length_reward is None and config.length_normalization is None and config.min_new_tokens == 0:
        hint = ("ranked by log-probability alone (preset='plain'), a short output often wins: use the prompt "
                "format's preset (leave preset out, or preset='auto') or min_new_tokens=1")
    elif config.min_new_tokens == 0:
        hint = "min_new_tokens=1 forbids an empty output"
    else:
        hint = "its tokens have no text"
    return f"the output is empty: the model ranked {what} first; {hint}"


def distinct(hyps: Sequence[Any], n: int) -> tuple[Any, ...]:
    """The first ``n`` of ``hyps`` (best first) whose texts differ: with ``stop`` strings two
    outputs may keep the same text (" it" + "." and " it" + ".\n" both keep " it")."""
    out: list[Any] = []
    seen: set[str] = set()
    for h in hyps:
        if h.text not in seen:
            seen.add(h.text)
            out.append(h)
    return tuple(out[:n])


def hypotheses(raw: Sequence[Any], token_bytes: Sequence[bytes | None], cfg: SearchConfig | None) -> tuple[Any, ...]:
    """The :class:`~.results.Hypothesis` of each raw one, a stop string's cut applied (its kept
    tokens and text); with ``cfg.stop`` the ``nbest`` best distinct texts (the search kept the
    whole beam's outputs to choose from)."""
    from .results import Hypothesis
    from .search.stops import kept_output

    tb = token_bytes
    out = []
    for h in raw:
        tokens = list(h.tokens)
        if h.cut:
            tokens, text = kept_output(tokens, h.cut, tb)
        else:
            text = b"".join(tb[t] or b"" for t in tokens if 0 <= t < len(tb))
        out.append(Hypothesis(text.decode("utf-8", "replace"), tuple(tokens), h.score, h.logprob, h.satisfied,
                              h.phrases_met, h.finish_reason))
    return distinct(out, cfg.nbest) if cfg is not None and cfg.stop else tuple(out)
