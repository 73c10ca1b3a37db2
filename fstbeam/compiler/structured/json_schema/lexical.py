"""JSON tokens as byte automata: strings (with escapes), numbers, and exact numeric bounds.

Strings are built on the *decoded* text first (UTF-8 of the code points the string holds: where
`pattern`, `format`, `minLength` and `enum` apply) and then JSON-escaped once by `encode_content`:
every code point may be written raw (except `"`, `\\` and controls), with its short escape
(`\\" \\\\ \\/ \\b \\f \\n \\r \\t`) or, for ASCII, as `\\u00XX` (either hex case). A non-ASCII
code point is written raw (its `\\uXXXX` form is not accepted) and U+0000 cannot be written.
Free strings use the same encoding, so complements and intersections stay consistent.

Numeric bounds are exact on decimal magnitudes (`-?(0|[1-9][0-9]*)(\\.[0-9]+)?`): a bounded
number is written without an exponent. An unbounded number takes the full JSON grammar.
"""
from __future__ import annotations

from decimal import Decimal
from functools import cache

import pynini

from ....errors import SpecError
from ....fst.optimize import optimize
from ..regex.utf8 import ANY_CHAR, codepoint_ranges_fst

__all__ = [
    "lit", "chars", "empty", "epsilon", "repeat", "union", "encode_content", "string_of", "free_string",
    "number_fst", "integer_fst", "bounds_fst", "multiple_of_fst", "number_equal_fst",
    "any_char", "MAX_BOUND_DIGITS",
]

MAX_BOUND_DIGITS = 400  # a bound with more digits (e.g. 1e500) is refused
MAX_MULTIPLE_STATES = 20_000
_SHORT = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f",
          0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t"}


def lit(text: str | bytes) -> pynini.Fst:
    """The one byte string ``text`` (UTF-8); built arc by arc (pynini's string parser treats
    brackets specially in byte mode)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    f = pynini.Fst()
    s = f.add_state()
    f.set_start(s)
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for b in data:
        if b == 0:
            raise SpecError("JSON text with a NUL byte cannot be compiled")
        t = f.add_state()
        f.add_arc(s, pynini.Arc(b, b, one, t))  # type: ignore[attr-defined]
        s = t
    f.set_final(s)
    return f


def chars(*ranges: tuple[int, int]) -> pynini.Fst:
    return codepoint_ranges_fst(ranges)


def empty() -> pynini.Fst:
    f = pynini.Fst()
    f.add_state()
    f.set_start(0)
    return f


def epsilon() -> pynini.Fst:
    return lit(b"")


def repeat(f: pynini.Fst, lo: int, hi: int | None = None) -> pynini.Fst:
    """``f`` repeated ``lo`` to ``hi`` times (None: no upper bound). Not `pynini.closure(f,
    lo, hi)` directly: there an upper bound of 0 means *no* bound (`maxItems: 0` accepted
    any array)."""
    if hi is None:
        return pynini.closure(f, lo)
    if hi < lo:
        return empty()
    return epsilon() if hi == 0 else pynini.closure(f, lo, hi)


def union(fsts: list[pynini.Fst]) -> pynini.Fst:
    if not fsts:
        return empty()
    return pynini.union(*fsts) if len(fsts) > 1 else fsts[0].copy()


@cache
def any_char() -> pynini.Fst:
    return codepoint_ranges_fst(ANY_CHAR)


def _forms(b: int) -> list[bytes]:
    """The JSON spellings of the decoded byte ``b`` (a whole ASCII char, or one byte of a
    multi-byte UTF-8 sequence, which is copied)."""
    if b >= 0x80:
        return [bytes([b])]
    out = [] if b < 0x20 or b in (0x22, 0x5C) else [bytes([b])]
    if b in _SHORT:
        out.append(_SHORT[b])
    hi, lo = tuple(f"{b:02x}")
    for h in {hi, hi.upper()}:
        for low in {lo, lo.upper()}:
            out.append(f"\\u00{h}{low}".encode())
    return out


@cache
def _escaper() -> pynini.Fst:
    """A one-state transducer from decoded UTF-8 to its JSON spellings."""
    f = pynini.Fst()
    s = f.add_state()
    f.set_start(s)
    f.set_final(s)
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for b in range(1, 256):
        for form in _forms(b):
            src = s
            for k, out in enumerate(form):
                dst = s if k == len(form) - 1 else f.add_state()
                f.add_arc(src, pynini.Arc(b if k == 0 else 0, out, one, dst))  # type: ignore[attr-defined]
                src = dst
    f.arcsort("ilabel")
    return f


def encode_content(decoded: pynini.Fst, *, stage: str = "json string") -> pynini.Fst:
    """The JSON-escaped spellings of every decoded string in ``decoded`` (no quotes)."""
    d = decoded.copy()
    d.arcsort("olabel")
    out = pynini.compose(d, _escaper()).project("output")
    return optimize(out, stage=stage)


def string_of(decoded: pynini.Fst, *, stage: str = "json string") -> pynini.Fst:
    """``"`` + the JSON spellings of ``decoded`` + ``"``."""
    return optimize(lit('"') + encode_content(decoded, stage=stage) + lit('"'), stage=stage)


@cache
def _free_string() -> pynini.Fst:
    return string_of(pynini.closure(any_char()), stage="json free string")


def free_string() -> pynini.Fst:
    return _free_string().copy()


# -- numbers -----------------------------------------------------------------------------------

def _d() -> pynini.Fst:
    return chars((0x30, 0x39))


def _digits_above(d: str) -> pynini.Fst | None:
    return chars((ord(d) + 1, 0x39)) if d < "9" else None


@cache
def _int_mag() -> pynini.Fst:
    return optimize(lit("0") | chars((0x31, 0x39)) + pynini.closure(_d()), stage="json int")


@cache
def _frac() -> pynini.Fst:
    return lit(".") + pynini.closure(_d(), 1)


@cache
def _mag() -> pynini.Fst:
    """Decimal magnitudes without exponent: 0, 12, 0.50, ..."""
    return optimize(_int_mag() + _frac().ques, stage="json magnitude")


@cache
def _number() -> pynini.Fst:
    exp = chars((0x45, 0x45), (0x65, 0x65)) + chars((0x2B, 0x2B), (0x2D, 0x2D)).ques \
        + pynini.closure(_d(), 1)
    return optimize(lit("-").ques + _int_mag() + _frac().ques + exp.ques, stage="json number")


def number_fst() -> pynini.Fst:
    return _number().copy()


@cache
def _integer(zero_fraction: bool) -> pynini.Fst:
    body = _int_mag()
    if zero_fraction:  # draft 6+: 1.0 is an integer
        body = body + (lit(".") + pynini.closure(lit("0"), 1)).ques
    return optimize(lit("-").ques + body, stage="json integer")


def integer_fst(zero_fraction: bool = True) -> pynini.Fst:
    return _integer(zero_fraction).copy()


def _split(c: Decimal, where: str) -> tuple[str, str]:
    text = format(abs(c), "f")
    ip, _, fp = text.partition(".")
    ip, fp = ip.lstrip("0") or "0", fp.rstrip("0")
    if len(ip) + len(fp) > MAX_BOUND_DIGITS:
        raise SpecError(f"{where}: the bound {c} has more than {MAX_BOUND_DIGITS} digits")
    return ip, fp


def _mag_gt(ip: str, fp: str) -> pynini.Fst:
    parts = [chars((0x31, 0x39)) + pynini.closure(_d(), len(ip), len(ip)) + pynini.closure(_d())]
    for i, ch in enumerate(ip):  # same length, larger at position i
        above = _digits_above(ch)
        if above is not None:
            rest = pynini.closure(_d(), len(ip) - i - 1, len(ip) - i - 1)
            parts.append(lit(ip[:i]) + above + rest)
    bigger_int = union(parts) + _frac().ques
    fparts = [lit(fp) + pynini.closure(lit("0")) + chars((0x31, 0x39)) + pynini.closure(_d())]
    for i, ch in enumerate(fp):
        above = _digits_above(ch)
        if above is not None:
            fparts.append(lit(fp[:i]) + above + pynini.closure(_d()))
    return bigger_int | lit(ip + ".") + union(fparts)


def _mag_eq(ip: str, fp: str) -> pynini.Fst:
    if fp:
        return lit(f"{ip}.{fp}") + pynini.closure(lit("0"))
    return lit(ip) + (lit(".") + pynini.closure(lit("0"), 1)).ques


def _mag_cmp(c: Decimal, op: str, where: str) -> pynini.Fst:
    ip, fp = _split(c, where)
    gt = optimize(_mag_gt(ip, fp), stage="json bound")
    if op == ">":
        return gt
    ge = optimize(gt | _mag_eq(ip, fp), stage="json bound")
    if op == ">=":
        return ge
    return optimize(pynini.difference(_mag(), ge if op == "<" else gt), stage="json bound")


def bounds_fst(lower: tuple[Decimal, bool] | None, upper: tuple[Decimal, bool] | None,
               where: str) -> pynini.Fst:
    """Decimal numbers (no exponent) within the bounds; each bound is (value, exclusive)."""
    out = optimize(lit("-").ques + _mag(), stage="json bound")
    for bound, is_lower in ((lower, True), (upper, False)):
        if bound is None:
            continue
        c, exclusive = bound
        neg_all = lit("-") + _mag()
        if is_lower:
            if c >= 0 and not (c == 0 and not exclusive):
                lang = _mag_cmp(c, ">" if exclusive else ">=", where)
            elif c == 0:  # x >= 0: every magnitude, and -0
                lang = _mag() | lit("-") + _mag_eq("0", "")
            else:
                lang = _mag() | lit("-") + _mag_cmp(-c, "<" if exclusive else "<=", where)
        else:
            if c > 0 or (c == 0 and not exclusive):
                lang = neg_all | _mag_cmp(c, "<" if exclusive else "<=", where)
            else:
                lang = lit("-") + _mag_cmp(-c, ">" if exclusive else ">=", where)
        out = pynini.intersect(out, optimize(lang, stage="json bound"))
    return optimize(out, stage="json bound")


def number_equal_fst(value: Decimal, where: str) -> pynini.Fst:
    """The numbers equal to ``value`` written without exponent (1 = 1.0 = 1.00)."""
    ip, fp = _split(value, where)
    eq = _mag_eq(ip, fp)
    if value == 0:
        return optimize(lit("-").ques + eq, stage="json const number")
    return optimize((lit("-") if value < 0 else lit("")) + eq, stage="json const number")


def multiple_of_fst(m: Decimal, where: str) -> pynini.Fst:
    """Decimals (no exponent, optional sign) that are an exact multiple of ``m`` > 0: a DFA on
    the digits of x * 10^s modulo M, where m = M / 10^s."""
    sign, digits, exp = m.normalize().as_tuple()
    if sign or not digits or not isinstance(exp, int):
        raise SpecError(f"{where}: multipleOf must be a positive number, got {m}")
    s = max(0, -exp)
    big_m = int("".join(map(str, digits))) * 10 ** max(0, exp)
    n_states = big_m * (s + 2)
    if n_states > MAX_MULTIPLE_STATES:
        raise SpecError(f"{where}: multipleOf {m} needs {n_states:,} automaton states (more "
                        f"than {MAX_MULTIPLE_STATES:,}); this multipleOf cannot be compiled")
    f = pynini.Fst()
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    start = f.add_state()
    f.set_start(start)
    # state ids: int part (r) -> start+1+r; fraction with j digits read (r, j) -> ...
    int_s = [f.add_state() for _ in range(big_m)]
    frac_s = [[f.add_state() for _ in range(big_m)] for _ in range(s + 1)]
    zeros = f.add_state()  # all s fraction digits read and a multiple: only zeros may follow
    f.add_arc(start, pynini.Arc(0x2D, 0x2D, one, f.add_state()))  # type: ignore[attr-defined]
    minus = f.num_states() - 1
    for src in (start, minus):
        for d in range(10):
            f.add_arc(src, pynini.Arc(0x30 + d, 0x30 + d, one, int_s[d % big_m]))  # type: ignore[attr-defined]
    for r in range(big_m):
        for d in range(10):
            f.add_arc(int_s[r], pynini.Arc(0x30 + d, 0x30 + d, one, int_s[(r * 10 + d) % big_m]))  # type: ignore[attr-defined]
        if r * 10 ** s % big_m == 0:
            f.set_final(int_s[r])
        f.add_arc(int_s[r], pynini.Arc(0x2E, 0x2E, one, frac_s[0][r]))  # type: ignore[attr-defined]
        for j in range(s + 1):
            st = frac_s[j][r]
            if j > 0 and r * 10 ** (s - j) % big_m == 0:
                f.set_final(st)
            if j < s:
                for d in range(10):
                    f.add_arc(st, pynini.Arc(0x30 + d, 0x30 + d, one,  # type: ignore[attr-defined]
                                             frac_s[j + 1][(r * 10 + d) % big_m]))
            elif r == 0:
                f.add_arc(st, pynini.Arc(0x30, 0x30, one, zeros))  # type: ignore[attr-defined]
    f.set_final(zeros)
    f.add_arc(zeros, pynini.Arc(0x30, 0x30, one, zeros))  # type: ignore[attr-defined]
    syntax = optimize(lit("-").ques + _mag(), stage="json multipleOf")
    return optimize(pynini.intersect(f, syntax), stage="json multipleOf")
