"""Streaming beam search: send only what can no longer change.

A beam holds several hypotheses, and the best one now may be overtaken later, so a token of it
cannot be sent as it is chosen. What every output the request may still return begins with --
the prefix its live hypotheses, its finished n-best and its best partial output share
(``fstbeam.runtime.search.continuous.shared_prefix``) -- never changes: it is sent as soon as it grows,
and the rest when the request finishes. With DBA and must-include phrases the beam often
disagrees until late, so most of such an output may come at the end.

:class:`TextStream` turns the growing token prefix into text deltas: bytes are decoded only
once a UTF-8 character is complete, and text that may be the start of a ``stop`` string is held
back, so the deltas always add up to exactly the final (stop-cut) text.
"""
from __future__ import annotations

import codecs
import json

__all__ = ["TextStream", "cut_at_stop", "sse"]


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to the first occurrence of any ``stop`` string; whether one occurred."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text, False) if cut < 0 else (text[:cut], True)


class TextStream:
    """Text deltas of one choice from its growing shared token prefix (``token_bytes``: id ->
    bytes or None, as ``Vocab.token_bytes``)."""

    def __init__(self, token_bytes, stop: tuple[str, ...] = ()):
        self.token_bytes = token_bytes
        self.stop = tuple(s for s in stop if s)
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self._tokens = 0
        self._text = ""  # decoded text of the prefix so far
        self.sent = ""  # text sent so far
        self.stopped = False

    def feed(self, prefix: list[int]) -> str:
        """The new text to send, given the shared prefix (which only grows)."""
        if self.stopped:
            return ""
        tb = self.token_bytes
        new = b"".join(tb[t] or b"" for t in prefix[self._tokens:] if 0 <= t < len(tb))
        self._tokens = len(prefix)
        self._text += self._dec.decode(new)
        visible, hit = cut_at_stop(self._text, self.stop)
        if hit:
            self.stopped = True
            upto = len(visible)
        else:
            upto = max(len(self._text) - _pending_stop(self._text, self.stop), len(self.sent))
        delta = self._text[len(self.sent):upto]
        self.sent += delta
        return delta

    def finish(self, final_text: str) -> str:
        """The rest of the final text (``final_text`` already cut at a stop string)."""
        if not final_text.startswith(self.sent):  # cannot happen: the prefix never changes
            raise AssertionError(f"streamed text {self.sent!r} is not a prefix of the final {final_text!r}")
        rest = final_text[len(self.sent):]
        self.sent = final_text
        return rest


def _pending_stop(text: str, stop: tuple[str, ...]) -> int:
    """Length of the longest end of ``text`` that begins some stop string (held back: the next
    tokens may complete it)."""
    best = 0
    for s in stop:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return best


def sse(obj) -> str:
    """One server-sent event carrying ``obj`` as JSON (or the literal ``[DONE]``)."""
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n"
