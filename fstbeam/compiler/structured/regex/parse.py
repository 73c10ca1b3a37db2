"""Parse an ECMA-262 regular expression (JSON Schema's `pattern` dialect) into a small tree.

The dialect is ECMA-262 with the `u` flag as JSON Schema validators and the anchor engines
(llguidance, XGrammar) read it: code points, not UTF-16 units; `\\d \\w` are ASCII, `\\s` is
ECMA's Unicode whitespace set; `.` is any code point but a line terminator. Annex B leniency
where real schemas rely on it: a `{` that does not start a quantifier and a lone `]` or `}` are
literals, an escaped punctuation character is itself. What an automaton cannot do, or what this
parser does not know, is a SpecError naming the construct and its position: backreferences,
possessive quantifiers. The flags `i`, `m` and `s` are read in ECMA-262 2025's scoped form
`(?i:...)` and, for the whole pattern, as a leading `(?i)`. Lookarounds are parsed (the compiler reads them as
automaton operations): not inside one another, and not quantified themselves (a group around
one may be, as ECMA-262 allows); `\\b`/`\\B` are read as the lookarounds they mean.

Tree nodes are tuples:
  ("set", ranges)            one code point from inclusive ranges (normalized)
  ("cat", [node, ...])       concatenation ("cat", []) is the empty string
  ("alt", [node, ...])       alternation
  ("rep", node, lo, hi)      repetition, hi None = unbounded
  ("bol",) / ("eol",)        the ^ and $ assertions (start / end of the input)
  ("look", direction, negate, node, pinned)
                             (?=node) (?!node) ("ahead") or (?<=node) (?<!node) ("behind");
                             pinned: the lookahead ends with $ / the lookbehind starts with ^
"""
from __future__ import annotations

import re
from typing import Any

from ....errors import SpecError
from .unicode_data import case_closure, property_ranges
from .utf8 import ANY_CHAR, complement_ranges, normalize_ranges

__all__ = ["parse_regex", "Node", "MAX_REPEAT", "LINE_TERMINATORS", "ECMA_SPACE"]

Node = tuple[Any, ...]
Ranges = list[tuple[int, int]]

# The largest count a quantifier may name ({m}, {m,}, {m,n}): a count is unrolled into a chain.
MAX_REPEAT = 100_000

LINE_TERMINATORS: Ranges = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
# ECMA-262 WhiteSpace and LineTerminator (the \s class): Unicode Zs plus a few controls.
ECMA_SPACE: Ranges = normalize_ranges(
    [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
)
_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = normalize_ranges([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
_CLASS_ESCAPES = {
    "d": _DIGIT, "w": _WORD, "s": ECMA_SPACE,
    "D": complement_ranges(_DIGIT), "W": complement_ranges(_WORD), "S": complement_ranges(ECMA_SPACE),
}
_CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B, "f": 0x0C}


class _Parser:
    def __init__(self, pattern: str, where: str):
        self.p = pattern
        self.i = 0
        self.where = where
        self.flags: frozenset[str] = frozenset()  # "i" (case-insensitive), "m" (^ $ at line breaks), "s" (. takes them)

    # -- errors and scanning ------------------------------------------------------------------
    def fail(self, what: str, at: int | None = None) -> SpecError:
        at = self.i if at is None else at
        return SpecError(
            f"{self.where}: {what} at position {at} of the pattern {self.p!r}; "
            "fstbeam compiles regular expressions to finite automata (docs/structured.md lists "
            "the supported syntax)"
        )

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def take(self) -> str:
        if self.i >= len(self.p):
            raise self.fail("unexpected end of the pattern")
        ch = self.p[self.i]
        self.i += 1
        return ch

    # -- grammar ------------------------------------------------------------------------------
    def parse(self) -> Node:
        node = self.alternation()
        if self.i < len(self.p):
            raise self.fail("unmatched ')'")
        return node

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            start = self.i
            atom = self.atom()
            items.append(self.quantified(atom, start))
        return items[0] if len(items) == 1 else ("cat", items)

    def quantified(self, atom: Node, start: int) -> Node:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{" and (counts := self.counts()) is not None:
            lo, hi = counts
        else:
            return atom
        if atom[0] in ("bol", "eol"):
            raise self.fail("a quantifier on an anchor (^ or $)", start)
        if atom[0] == "look" or self.p[start:start + 2] in ("\\b", "\\B"):
            raise self.fail("a quantifier on a lookaround or word boundary (ECMA-262 with the u flag has none)", start)
        if self.peek() == "?":  # lazy: the same language
            self.i += 1
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.counts(peek=True)):
            raise self.fail(f"a quantifier after a quantifier ({self.peek()!r}; possessive "
                            "quantifiers are not ECMA-262)")
        return ("rep", atom, lo, hi)

    def counts(self, peek: bool = False) -> tuple[int, int | None] | None:
        """Parse `{m}`, `{m,}` or `{m,n}` at the cursor; None (cursor unmoved) if it is not one."""
        j, p = self.i + 1, self.p
        k = j
        while k < len(p) and p[k].isdigit():
            k += 1
        if k == j:
            return None
        lo = int(p[j:k])
        hi: int | None = lo
        if k < len(p) and p[k] == ",":
            m = k + 1
            while m < len(p) and p[m].isdigit():
                m += 1
            hi = int(p[k + 1:m]) if m > k + 1 else None
            k = m
        if k >= len(p) or p[k] != "}":
            return None
        if peek:
            return lo, hi
        if hi is not None and hi < lo:
            raise self.fail(f"the quantifier {p[self.i:k + 1]} has its bounds out of order")
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.fail(f"the quantifier {p[self.i:k + 1]} exceeds the limit of {MAX_REPEAT:,} "
                            "repetitions")
        self.i = k + 1
        return lo, hi

    def atom(self) -> Node:
        at = self.i
        ch = self.take()
        if ch == "(":
            return self.group(at)
        if ch == "[":
            return ("set", self.char_class())
        if ch == ".":
            return ("set", ANY_CHAR if "s" in self.flags else complement_ranges(LINE_TERMINATORS))
        if ch in "^$" and "m" in self.flags:  # at a line's start / end: beside a line terminator or the text's end
            return _look("behind" if ch == "^" else "ahead", True, complement_ranges(LINE_TERMINATORS))
        if ch == "^":
            return ("bol",)
        if ch == "$":
            return ("eol",)
        if ch == "\\":
            node = self.escape(in_class=False)
            return ("set", case_closure(node[1])) if "i" in self.flags and node[0] == "set" else node
        if ch in "*+?":
            raise self.fail(f"nothing to repeat before {ch!r}", at)
        if ch == "{":
            self.i = at
            counts = self.counts(peek=True)
            self.i = at + 1
            if counts is not None:
                raise self.fail("nothing to repeat before a '{m,n}' quantifier", at)
        return ("set", case_closure([(ord(ch), ord(ch))]) if "i" in self.flags else [(ord(ch), ord(ch))])

    def group(self, at: int) -> Node:
        if self.peek() == "?":
            nxt, nxt2 = self.peek(1), self.peek(2)
            if nxt == ":":
                self.i += 2
            elif nxt == "<" and nxt2 not in ("=", "!"):
                end = self.p.find(">", self.i)
                name = self.p[self.i + 2:end] if end > 0 else ""
                if not name or not all(c.isalnum() or c in "_$" for c in name):
                    raise self.fail("a malformed group name", at)
                self.i = end + 1
            elif nxt in ("=", "!") or (nxt == "<" and nxt2 in ("=", "!")):
                return self.lookaround(at, "ahead" if nxt in ("=", "!") else "behind")
            else:
                return self.flag_group(at)
        node = self.alternation()
        if self.peek() != ")":
            raise self.fail("missing ')' for the group opened", at)
        self.i += 1
        return ("cat", [node]) if node[0] == "look" else node  # (a group around one may be quantified)

    def flag_group(self, at: int) -> Node:
        """``(?i:...)``, ``(?-i:...)``, ``(?is-s:...)`` (ECMA-262 2025's modifiers), and ``(?i)`` at
        the very start of the pattern for the whole of it (Python's and Rust's form), the cursor
        on the ``?``. Flags: ``i`` (case-insensitive, by simple case folding), ``m`` (``^`` and
        ``$`` also at line breaks: the lookarounds they then are) and ``s`` (``.`` matches line
        terminators too)."""
        found = re.match(r"\?([A-Za-z]*)(?:-([A-Za-z]*))?([:)])", self.p[self.i:])
        if found is None or not (found.group(1) or found.group(2)):
            raise self.fail("an unknown group '(?' (groups are (...), (?:...), (?<name>...), lookarounds "
                            "and the flag groups (?i:...), (?s:...))", at)
        on, off, end = set(found.group(1)), set(found.group(2) or ""), found.group(3)
        if (on | off) - {"i", "m", "s"}:
            raise self.fail(f"the flag {sorted((on | off) - {'i', 'm', 's'})[0]!r} is not supported (i, m and s are)", at)
        self.i += found.end()
        if end == ")":
            if at != 0 or off:
                raise self.fail("inline flags (?i) only at the very start of the pattern; scope them "
                                "elsewhere with (?i:...)", at)
            self.flags = frozenset(on)
            return ("cat", [])
        saved, self.flags = self.flags, (self.flags | on) - off
        node = self.alternation()
        if self.peek() != ")":
            raise self.fail("missing ')' for the group opened", at)
        self.i += 1
        self.flags = saved
        return ("cat", [node]) if node[0] == "look" else node

    def lookaround(self, at: int, direction: str) -> Node:
        """``(?=X)``, ``(?!X)``, ``(?<=X)``, ``(?<!X)`` (the cursor on the ``?``): a look node.
        Inside one, no other lookaround, and no anchor but a lookahead's last ``$`` (the text
        ends there) or a lookbehind's first ``^`` (the text starts there)."""
        self.i += 2 if direction == "ahead" else 3
        negate = self.p[self.i - 1] == "!"
        inner = self.alternation()
        if self.peek() != ")":
            raise self.fail("missing ')' for the lookaround opened", at)
        self.i += 1
        items = list(inner[1]) if inner[0] == "cat" else [inner]
        pinned = bool(items) and items[-1 if direction == "ahead" else 0] == (("eol",) if direction == "ahead" else ("bol",))
        if pinned:
            items = items[:-1] if direction == "ahead" else items[1:]
        body: Node = ("cat", items)
        if _holds(body, ("look", "bol", "eol")):
            raise self.fail("a lookaround with another lookaround (a word boundary \\b or \\B is one), or an anchor "
                            "other than a lookahead's final $ or a lookbehind's leading ^, inside it", at)
        return ("look", direction, negate, body, pinned)

    def escape(self, in_class: bool) -> Node:
        at = self.i - 1
        ch = self.take()
        if ch in _CLASS_ESCAPES:
            if "i" in self.flags and ch in "wW":  # (ECMA: the word characters and their case variants, ſ and K among them)
                word = case_closure(_WORD)
                return ("set", word if ch == "w" else complement_ranges(word))
            return ("set", _CLASS_ESCAPES[ch])
        if ch in "pP" and self.peek() == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                raise self.fail("an unterminated \\p{...}", at)
            name = self.p[self.i + 1:end]
            self.i = end + 1
            ranges = property_ranges(name)
            if ranges is None:
                raise self.fail(f"the Unicode property \\{ch}{{{name}}} is not supported "
                                "(general categories such as L, Lu, Nd, P are)", at)
            ranges = case_closure(ranges) if "i" in self.flags else ranges
            return ("set", complement_ranges(ranges) if ch == "P" else ranges)
        if ch == "b":
            if in_class:
                return _char(0x08)
            return _boundary(True, "i" in self.flags)
        if ch == "B" and not in_class:
            return _boundary(False, "i" in self.flags)
        if ch.isdigit() and ch != "0":
            raise self.fail(f"the backreference \\{ch} is not supported", at)
        if ch == "k" and self.peek() == "<":
            raise self.fail("the named backreference \\k<...> is not supported", at)
        if ch == "0":
            if self.peek().isdigit():
                raise self.fail("an octal escape is not supported", at)
            return ("set", [])  # NUL: no byte label can spell it
        if ch in _CONTROL_ESCAPES:
            return _char(_CONTROL_ESCAPES[ch])
        if ch == "c" and self.peek().isascii() and self.peek().isalpha():
            return _char(ord(self.take()) % 32)
        if ch == "x":
            return _char(self.hex_digits(2, at))
        if ch == "u":
            return _char(self.unicode_escape(at))
        if not (ch.isascii() and ch.isalnum()):  # an identity escape: \. \/ \- \_ ...
            return _char(ord(ch))
        raise self.fail(f"the escape \\{ch} is not ECMA-262 (write the character itself)", at)

    def hex_digits(self, n: int, at: int) -> int:
        digits = self.p[self.i:self.i + n]
        if len(digits) != n or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail(f"a malformed escape (expected {n} hex digits)", at)
        self.i += n
        return int(digits, 16)

    def unicode_escape(self, at: int) -> int:
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1:end] if end > 0 else ""
            if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits) or int(digits, 16) > 0x10FFFF:
                raise self.fail("a malformed \\u{...} escape", at)
            self.i = end + 1
            return int(digits, 16)
        cp = self.hex_digits(4, at)
        # A UTF-16 surrogate pair written as two escapes is one code point.
        if 0xD800 <= cp <= 0xDBFF and self.p[self.i:self.i + 2] == "\\u":
            save = self.i
            self.i += 2
            try:
                low = self.hex_digits(4, at)
            except SpecError:
                self.i = save
                return cp
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            self.i = save
        return cp

    def char_class(self) -> Ranges:
        at = self.i - 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        ranges: Ranges = []
        while True:
            if self.i >= len(self.p):
                raise self.fail("missing ']' for the class opened", at)
            if self.peek() == "]":  # ECMA: [] is empty, [^] is any character
                self.i += 1
                break
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self.class_atom()
                if isinstance(lo, list) or isinstance(hi, list):
                    # Annex B: a class escape on either side makes the '-' a literal.
                    for side in (lo, hi, 0x2D):
                        ranges += side if isinstance(side, list) else [(side, side)]
                    continue
                if hi < lo:
                    raise self.fail(f"the class range {chr(lo)!r}-{chr(hi)!r} is out of order", at)
                ranges.append((lo, hi))
            elif isinstance(lo, list):
                ranges += lo
            else:
                ranges.append((lo, lo))
        ranges = normalize_ranges(ranges)
        if "i" in self.flags:  # (closed before a negation: [^a] leaves out A too)
            ranges = case_closure(ranges)
        return complement_ranges(ranges) if negate else ranges

    def class_atom(self) -> Any:
        """One class member: a code point (int), or the ranges (list) of a class escape (\\d, \\p{L})."""
        ch = self.take()
        if ch != "\\":
            return ord(ch)
        letter = self.peek()
        node = self.escape(in_class=True)
        if letter in _CLASS_ESCAPES or letter in ("p", "P") or not node[1]:
            return list(node[1])
        return node[1][0][0]


def _char(cp: int) -> Node:
    return ("set", normalize_ranges([(cp, cp)]))


def parse_regex(pattern: str, where: str = "regex") -> Node:
    """Parse ``pattern`` into the tree described in the module docstring."""
    if not isinstance(pattern, str):
        raise SpecError(f"{where}: a regular expression must be a string, got {type(pattern).__name__}")
    return _Parser(pattern, where).parse()


def _holds(node: Node, kinds: tuple[str, ...]) -> bool:
    """Does ``node`` hold a node of one of ``kinds``?"""
    if node[0] in kinds:
        return True
    if node[0] in ("cat", "alt"):
        return any(_holds(n, kinds) for n in node[1])
    if node[0] == "rep":
        return _holds(node[1], kinds)
    if node[0] == "look":
        return _holds(node[3], kinds)
    return False


def _boundary(word: bool, icase: bool) -> Node:
    """``\\b`` (``word``) or ``\\B`` as lookarounds over ECMA's ASCII ``\\w``: a word character on
    exactly one side (\\b) or on both or neither (\\B); the text's ends are non-word sides."""
    w = case_closure(_WORD) if icase else _WORD
    after_word = ("cat", [_look("behind", False, w), _look("ahead", word, w)])  # (\\b: no word character next)
    after_other = ("cat", [_look("behind", True, w), _look("ahead", not word, w)])  # (\\b: a word character next)
    return ("alt", [after_word, after_other])


def _look(direction: str, negate: bool, ranges: Ranges) -> Node:
    """The lookaround over one character of ``ranges`` (one side of an assertion: `\\b`, `m`'s `^`/`$`)."""
    return ("look", direction, negate, ("cat", [("set", ranges)]), False)
