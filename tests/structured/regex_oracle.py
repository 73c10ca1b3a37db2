"""Python's `re` as the oracle for ECMA-262 patterns, and strings to test them on.

`to_python(pattern)` is the decode side's `python_pattern` (fstbeam/runtime/structured_check.py):
it rewrites the few places where ECMA-262 and Python differ, token by token: `$` (Python's also
matches before a final newline), `.` (ECMA excludes \\r, U+2028 and U+2029 too), `\\s`/`\\S`
(ECMA's Unicode whitespace set), named groups; `\\d \\w` come out ASCII. Patterns it cannot
translate faithfully give None (the caller skips them).
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from fstbeam.runtime.structured_check import ECMA_SPACE_CLASS, python_pattern

__all__ = ["ECMA_SPACE_CLASS", "to_python", "random_walk", "mutations", "accepts", "dev_sample", "dev_patterns"]


def to_python(pattern: str) -> re.Pattern | None:
    """The pattern as Python's `re` reads it with ECMA-262's meaning (the decode side's check,
    `python_pattern`: written token by token, not from the compiler's parse), or None."""
    text = python_pattern(pattern)
    return None if text is None else re.compile(text)


def random_walk(dfa, rng: random.Random, *, stop: float = 0.25, max_len: int = 60) -> bytes | None:
    """A random accepted byte string of a trimmed DFA (None if none was reached in time)."""
    q, out = dfa.start, bytearray()
    for _ in range(max_len * 4):
        if dfa.final[q] and (rng.random() < stop or len(out) >= max_len):
            return bytes(out)
        nxt = dfa.next[q]
        labels = [b for b in range(256) if nxt[b] >= 0]
        if not labels:
            return bytes(out) if dfa.final[q] else None
        b = rng.choice(labels)
        out.append(b)
        q = int(nxt[b])
    return None


ALPHABET = "aAzZ09_-. /:@#\n\r\t\u00a0\u2028é€😀{}[]()+*?^$|\\\"'"


def mutations(text: str, rng: random.Random, n: int, alphabet: str = ALPHABET) -> list[str]:
    """Near misses: the text with a character deleted, inserted, replaced or doubled."""
    out = []
    for _ in range(n):
        s = list(text)
        op = rng.randrange(4)
        pos = rng.randrange(len(s) + 1)
        ch = rng.choice(alphabet + (text or "a"))
        if op == 0 and s:
            del s[min(pos, len(s) - 1)]
        elif op == 1:
            s.insert(pos, ch)
        elif op == 2 and s:
            s[min(pos, len(s) - 1)] = ch
        else:
            s[pos:pos] = s[pos:pos + 2]
        out.append("".join(s).replace("\x00", ""))
    return out


def dev_sample() -> Path:
    """The JSONSchemaBench development sample: shared/data beside the repository (CI's layout)."""
    repo = Path(__file__).resolve().parents[2]
    for p in (repo.parent / "shared" / "data" / "jsonschemabench_dev", Path("/work/shared/data/jsonschemabench_dev")):
        if p.is_dir():
            return p
    return repo.parent / "shared" / "data" / "jsonschemabench_dev"


def dev_patterns() -> list[str]:
    """Every distinct ``pattern`` of the development sample's schemas, sorted."""
    found: set[str] = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "pattern" and isinstance(v, str):
                    found.add(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for f in sorted(dev_sample().glob("*.json")):
        walk(json.loads(f.read_text(encoding="utf-8"))["schema"])
    return sorted(found)


def accepts(fst, text: str) -> bool:
    """Whether the byte acceptor ``fst`` (deterministic) accepts ``text``'s UTF-8 bytes."""
    state = fst.start()
    if state < 0:
        return False
    import pynini

    zero = pynini.Weight.zero(fst.weight_type())
    for b in text.encode("utf-8"):
        nxt = [a.nextstate for a in fst.arcs(state) if a.ilabel == b]
        if not nxt:
            return False
        state = nxt[0]
    return fst.final(state) != zero
