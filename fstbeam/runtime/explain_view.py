"""Text of an :class:`~.explain.Explanation`: the output with its constrained words marked, a
line per token, and the score next to the best unconstrained one. ``color=True`` uses plain
ANSI escapes (the command line turns it on for a terminal only); without colour the marks are
brackets, so the text reads the same in a log file."""
from __future__ import annotations

__all__ = ["render"]

_RESET = "\x1b[0m"
_STYLE = {"phrase": "\x1b[1;32m", "prefix": "\x1b[1;36m", "dim": "\x1b[2m", "bad": "\x1b[31m", "head": "\x1b[1m"}
_BRACKETS = {"phrase": ("[", "]"), "prefix": ("{", "}")}


def _paint(text: str, style: str, color: bool) -> str:
    return f"{_STYLE[style]}{text}{_RESET}" if color and text else text


def marked_text(e, color: bool) -> str:
    """The output with each span marked: phrases green (or ``[...]``), the prefix cyan (``{...}``)."""
    out, at = [], 0
    for s in sorted(e.spans, key=lambda s: (s.start, -s.end)):
        if s.start < at:  # overlapping spans: the first one wins
            continue
        out.append(e.text[at:s.start])
        inner = e.text[s.start:s.end]
        if color:
            out.append(_paint(inner, s.kind, True))
        else:
            left, right = _BRACKETS.get(s.kind, ("[", "]"))
            out.append(f"{left}{inner}{right}")
        at = s.end
    out.append(e.text[at:])
    return "".join(out)


def _length_line(e) -> str:
    if e.length_mode == "reward":
        return f"length reward {e.length_term:+.3f}"
    if e.length_mode == "normalize":
        return f"length normalization {e.length_term:+.3f}"
    return "no length term"


def render(e, color: bool = False) -> str:
    text = marked_text(e, color)
    lines = [_paint("output", "head", color) + "  " + (text if color else repr(text))]
    if e.constraints:
        lines.append(_paint("constraints", "head", color) + "  " + "; ".join(e.constraints)
                     + f"  (satisfied: {'yes' if e.satisfied else 'NO'})")
    lines.append(_paint("score", "head", color) + f"  {e.score:.3f} = log-probability {e.logprob:.3f} "
                 f"(tokens {e.logprob - e.end_logprob:.3f}, end {e.end_logprob:.3f}) {_length_line(e)}")
    if e.unconstrained_score is not None:
        diff = e.difference
        why = ("what the constraints cost" if diff < -1e-6 else "the constraints cost nothing" if diff <= 1e-6
               else "the unconstrained beam missed this output")
        parts = f" (log-probability {e.unconstrained_logprob:.3f})" if e.unconstrained_logprob is not None else ""
        lines.append(_paint("unconstrained", "head", color) + f"  best score {e.unconstrained_score:.3f}{parts} for "
                     f"{e.unconstrained_text!r}; difference {_paint(f'{diff:+.3f}', 'bad' if diff < -1e-6 else 'dim', color)}"
                     f" ({why})")
    for note in e.notes:
        lines.append(_paint(f"note  {note}", "dim", color))
    width = max([len(repr(t.text)) for t in e.tokens] + [5])
    lines.append(_paint(f"  {'#':>3}  {'token':<{width}}  {'log-prob':>8}  constraint", "dim", color))
    for i, t in enumerate(e.tokens):
        what = "; ".join(t.advanced)
        if color and what:
            what = _paint(what, "phrase" if "met" in what or "done" in what else "dim", True)
        lines.append(f"  {i:>3}  {t.text!r:<{width}}  {t.logprob:8.3f}  {what}".rstrip())
    return "\n".join(lines)
