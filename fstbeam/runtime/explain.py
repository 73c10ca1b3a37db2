"""Why an output is what it is: ``result.explain()`` and ``fstbeam generate --explain``.

The explanation is recomputed after the search from what the search chose, so the search itself
stays as it is:

- the chosen tokens are replayed through the constraints' host matcher, which says, token by
  token, which must-include phrase, prefix or avoided phrase each one moved (bytes matched
  before and after);
- one forward pass over prompt + output gives each token's log-probability (over the whole
  vocabulary, or over the tokens the constraints allowed at that step with ``renormalize``);
  what the search's total adds to their sum is the end of the output (EOS or the newline that
  stopped it);
- the result's score minus its log-probability is the length reward it earned (or the change
  that length normalization made);
- the same search without constraints gives the best unconstrained output, whose score is shown
  next to the result's with the difference: what the constraints cost under the model.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

__all__ = ["ExplainContext", "Explanation", "Span", "TokenStep", "explain"]


@dataclass(frozen=True)
class TokenStep:
    """One output token: its text, log-probability and what it did to each constraint."""

    token_id: int
    text: str
    logprob: float
    advanced: tuple[str, ...] = ()  # e.g. "phrase 'my family' 3/9", "phrase 'my family' met"


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of the text that meet a constraint (a phrase, the prefix)."""

    start: int
    end: int
    kind: str  # "phrase" or "prefix"
    constraint: str


@dataclass(frozen=True)
class Explanation:
    text: str
    tokens: tuple[TokenStep, ...]
    spans: tuple[Span, ...]
    end_logprob: float  # the EOS / newline that ended the output (0 when the length limit did)
    logprob: float
    score: float
    length_term: float  # score - logprob: the length reward earned (or the normalization's change)
    length_mode: str  # "reward", "normalize" or "none"
    constraints: tuple[str, ...]  # what the output had to satisfy, in words
    satisfied: bool
    unconstrained_text: str | None = None
    unconstrained_score: float | None = None
    unconstrained_logprob: float | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def difference(self) -> float | None:
        """The result's score minus the best unconstrained score (<= 0: what the constraints cost)."""
        if self.unconstrained_score is None:
            return None
        return self.score - self.unconstrained_score

    def to_dict(self) -> dict:
        d = asdict(self)
        d["difference"] = self.difference
        return d

    def render(self, color: bool = False) -> str:
        from .explain_view import render

        return render(self, color)

    def __str__(self) -> str:
        return self.render(False)


@dataclass(frozen=True)
class ExplainContext:
    """What ``GenerationResult.explain`` needs: the decoder, the prompt, constraints and config."""

    decoder: Any
    prompt: Any
    constraints: Any
    config: Any


def _alternatives(a) -> list[str]:
    if a.items:
        return [alt for item in json.loads(a.items)["items"] for alt in item]
    return [a.text]


def _top(a) -> int:
    return int(a.max_progress or len(a.literal))


def _replay(cc, ids, vocab) -> tuple[list[tuple[str, ...]], dict[int, int], list]:
    """Per token: what it advanced; the byte offset where each light automaton was met; and the
    allowed ids before each token."""
    import numpy as np

    m = cc.matcher()
    steps: list[tuple[str, ...]] = []
    allowed: list[np.ndarray] = []
    met_at: dict[int, int] = {}  # light automaton index -> byte offset where it was met
    offset = 0
    for t in ids:
        allowed.append(m.allowed_token_ids())
        before = list(m.light_states)
        m.advance(t)  # the search only chooses allowed tokens; a refusal here is a bug, so it raises
        offset += len(vocab.token_bytes[t] or b"")
        notes = []
        for k, (a, s0, s1) in enumerate(zip(cc.light, before, m.light_states)):
            p0, p1, top = int(a.progress[s0]), int(a.progress[s1]), _top(a)
            if p0 == p1 or (a.kind == "prefix" and p0 >= top):
                continue
            what = f"{a.kind} {a.text!r}"
            if a.kind == "avoid":
                notes.append(f"{what}: {p1}/{top} bytes matched (must not complete)" if p1 else f"{what}: match broken")
            elif p1 >= top:
                notes.append(f"{what} met" if a.kind != "prefix" else f"{what} done")
                met_at.setdefault(k, offset)
            elif p1 > p0:
                notes.append(f"{what} {p1}/{top}")
            else:
                notes.append(f"{what}: partial match lost ({p0} -> {p1})")
        steps.append(tuple(notes))
    return steps, met_at, allowed


def _spans(cc, text: str, met_at: dict[int, int]) -> list[Span]:
    """The characters of ``text`` that met each phrase (its last occurrence ending where it was
    met) and the prefix."""
    data = text.encode("utf-8")
    spans = []
    for k, end in sorted(met_at.items()):
        a = cc.light[k]
        if a.kind == "prefix":
            start_b, end_b = 0, min(len(a.literal), len(data))
        else:
            hay = data[:end] if a.case_sensitive else data[:end].lower()
            best = None
            for alt in _alternatives(a):
                needle = alt.encode("utf-8") if a.case_sensitive else alt.encode("utf-8").lower()
                i = hay.rfind(needle)
                if i < 0 and alt[:1].isalpha():  # a sentence-case phrase met as "The ..."
                    i = hay.rfind(needle[:1].upper() + needle[1:])
                if i >= 0 and (best is None or i + len(needle) > best[1]):
                    best = (i, i + len(needle))
            if best is None:
                continue
            start_b, end_b = best
        spans.append(Span(len(data[:start_b].decode("utf-8", "replace")), len(data[:end_b].decode("utf-8", "replace")),
                          a.kind, a.text))
    return spans


@torch.inference_mode()
def _token_logprobs(decoder, prompt, ids, allowed=None) -> list[float]:
    """Log-probability of each output token after ``prompt`` (one uncached forward pass); over
    ``allowed[i]`` only when given (renormalized scoring)."""
    if not ids:
        return []
    model = decoder.model
    p = decoder.encode(prompt)
    dev = decoder.device
    if decoder.adapter.kind == "seq2seq":
        dec = torch.tensor([[decoder.adapter.decoder_start or 0] + list(ids[:-1])], device=dev)
        logits = model(input_ids=torch.tensor([p], device=dev), decoder_input_ids=dec).logits[0].float()
    else:
        logits = model(torch.tensor([p + list(ids)], device=dev)).logits[0, len(p) - 1 : -1].float()
    logits = logits[:, : decoder.vocab_size]
    out = []
    for i, t in enumerate(ids):
        row = logits[i]
        if allowed is not None and len(allowed[i]):
            sel = torch.as_tensor(allowed[i], device=dev)
            lse = torch.logsumexp(row[sel[sel < row.numel()]], 0)
        else:
            lse = torch.logsumexp(row, 0)
        out.append(float(row[t] - lse))
    return out


def _describe(cc) -> tuple[str, ...]:
    if cc is None:
        return ()
    out = []
    spec = cc.spec or {}
    if cc.hard is not None:
        from .structured_check import describe_structured

        structured = describe_structured(spec)
        if spec.get("cefr"):
            out.append(f"every word CEFR {str(spec['cefr']).upper()} or below")
        elif spec.get("grammar"):
            out.append(f"accepted by grammar {spec['grammar']}")
        elif spec.get("words") is not None or not structured:
            out.append("every word from the word list")
        out += structured
    out += [f"{a.kind} {a.text!r}" for a in cc.light]
    return tuple(out)


def explain(decoder, prompt, constraints, config, result, *, unconstrained: bool = True) -> Explanation:
    """The explanation of ``result`` (what ``decoder`` returned for ``prompt`` under
    ``constraints`` and ``config``); ``unconstrained=False`` skips the unconstrained search."""
    ids = list(result.token_ids)
    vocab = decoder.vocab
    steps, met_at, allowed = ([()] * len(ids), {}, None) if constraints is None else _replay(constraints, ids, vocab)
    renorm = bool(config.renormalize)
    lps = _token_logprobs(decoder, prompt, ids, allowed if renorm and constraints is not None else None)
    tokens = tuple(TokenStep(t, (vocab.token_bytes[t] or b"").decode("utf-8", "replace"), lp, notes)
                   for t, lp, notes in zip(ids, lps, steps))
    end = result.logprob - sum(lps) if result.finish_reason in ("eos", "stop") else 0.0  # EOS, or a stop string
    mode = config.scoring.mode
    notes = []
    if renorm:
        notes.append("log-probabilities over the allowed tokens only (renormalize)")
    u_text = u_score = u_logprob = None
    if unconstrained and constraints is not None:
        [u] = decoder.generate([prompt], None, config)
        u_text, u_score, u_logprob = u.text, u.score, u.logprob
    elif constraints is None:
        u_text, u_score, u_logprob = result.text, result.score, result.logprob
    return Explanation(result.text, tokens, tuple(_spans(constraints, result.text, met_at)) if constraints is not None else (),
                       end, result.logprob, result.score, result.score - result.logprob, mode, _describe(constraints),
                       result.satisfied, u_text, u_score, u_logprob, tuple(notes))
