"""Where the length target comes from: the query, never the few-shot examples.

The bounded length reward (:mod:`.scoring`) rewards every output token up to a target length
``l``; with ``length_ratio`` set, ``l = length_ratio * q`` where ``q`` is the number of tokens
of the prompt's *query* (an explicit ``target_length`` wins over both). A few-shot prompt has
70-130 tokens, so counting all of it put the target at or past ``max_new_tokens``: every token
up to the limit earned the reward, and outputs ran on ("1. 2. 3.") until they were cut.

The query of a prompt:

1. Its text: with a ``{prompt}`` template or the chat format, the user's own text (what fills
   the template or the user turn, without the template's words); for a raw prompt (text or
   token ids) the whole prompt.
2. A trailing *cue* line is dropped when lines come before it: a label of at most three words
   ending in a colon with nothing after it ("German:", "Sentence:", "Answer:"); it names the
   answer, it is not what the answer is as long as.
3. The query is then the last block: the text after the last blank line or, when there is no
   blank line, the last line. "Words: a, b, c\\nSentence:" gives "Words: a, b, c";
   "English: The cat sat.\\nGerman:" gives "English: The cat sat."; a one-line question or a
   sentence to continue is the whole prompt.

``q`` counts the prompt's tokens that overlap the query's bytes (for a template or chat prompt:
the tokens of the user's text encoded alone), at least 1; where the query is the whole prompt,
all its tokens, control tokens such as BOS included (the count the defaults were tuned with:
dropping BOS shortened continuations by a word and cost 0.7 chrF in ``bench_quality``). The rule runs inside
``Decoder.stream``, so ``generate``, ``fstbeam generate``, ``fstbeam batch`` and its files of
inputs all get the same target for the same prompt.
"""
from __future__ import annotations

import re
from typing import Sequence

__all__ = ["query_span", "query_tokens", "ends_with_cue"]

_BLANK = re.compile(rb"\n[ \t\r]*\n")
_CUE = re.compile(rb"[^\s:\d][^:\n]{0,40}:[ \t\r]*")


def _is_cue(line: bytes) -> bool:
    line = line.strip()
    return bool(_CUE.fullmatch(line)) and len(line[:-1].split()) <= 3


def ends_with_cue(text: bytes) -> bool:
    """Whether ``text``'s last line is a cue ("German:", "Answer:") after other text: the prompt
    asks for a one-line answer, as the examples of a few-shot prompt have (``stop_at="auto"``)."""
    body = text.rstrip()
    last_nl = body.rfind(b"\n")
    return last_nl >= 0 and _is_cue(body[last_nl + 1 :]) and bool(body[:last_nl].strip())


def query_span(text: bytes) -> tuple[int, int]:
    """The byte span ``[start, end)`` of the query of ``text`` (see the module docstring)."""
    end = len(text.rstrip())
    body = text[:end]
    last_nl = body.rfind(b"\n")
    if last_nl >= 0 and _is_cue(body[last_nl + 1 :]) and body[:last_nl].strip():
        end = len(body[:last_nl].rstrip())
        body = text[:end]
    blanks = list(_BLANK.finditer(body))
    if blanks:
        start = blanks[-1].end()
    else:
        start = body.rfind(b"\n") + 1
    while start < end and body[start : start + 1].isspace():
        start += 1
    return start, end


def query_tokens(ids: Sequence[int], token_bytes: Sequence[bytes | None]) -> int:
    """How many of ``ids`` (a prompt, or the user's text encoded alone) overlap the query's
    bytes; ``token_bytes[i]`` is token ``i``'s bytes (``None``/empty for control tokens)."""
    pieces = [token_bytes[t] or b"" if 0 <= t < len(token_bytes) else b"" for t in ids]
    text = b"".join(pieces)
    start, end = query_span(text)
    if end <= start or not (text[:start].strip() or text[end:].strip()):
        return max(1, len(ids))  # the whole prompt is the query: every token counts, as it always did
    n, pos = 0, 0
    for p in pieces:
        lo, pos = pos, pos + len(p)
        n += bool(p) and lo < end and pos > start
    return max(1, n)
