"""JSON Schema `format`s as automata of the decoded string (before JSON escaping).

Each checked format follows its RFC (grammar in the comment). Formats that are not regular or
not listed here are annotations, as the specification allows: any string is accepted
(`FORMATS_AS_ANNOTATION` names the known ones; an unknown name is treated the same way).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pynini

from ...fst.optimize import optimize
from .json_lexical import any_char, chars, lit, repeat, union

__all__ = ["format_fst", "CHECKED_FORMATS"]


def _rng(a: str, b: str) -> tuple[int, int]:
    return (ord(a), ord(b))


def _set(text: str) -> pynini.Fst:
    return chars(*[(ord(c), ord(c)) for c in text])


def _digit() -> pynini.Fst:
    return chars(_rng("0", "9"))


def _n(f: pynini.Fst, lo: int, hi: int | None = None) -> pynini.Fst:  # f{lo} or f{lo,hi}
    return repeat(f, lo, lo if hi is None else hi)


def _two(lo: int, hi: int) -> pynini.Fst:
    """Two-digit numbers lo..hi with a leading zero."""
    return union([lit(f"{v:02d}") for v in range(lo, hi + 1)])


def _hex() -> pynini.Fst:
    return chars(_rng("0", "9"), _rng("a", "f"), _rng("A", "F"))


def _leap_year() -> pynini.Fst:
    """Four-digit Gregorian leap years (RFC 3339 appendix C): divisible by 4, except centuries
    not divisible by 400. Divisibility by 4 is read from the last two digits; a century (``00``)
    is a leap year when its first two digits are divisible by 4 (0000, 0400, 2000)."""
    fours = [lit(f"{n:02d}") for n in range(0, 100, 4)]
    return _n(_digit(), 2) + union(fours[1:]) | union(fours) + lit("00")


def _date() -> pynini.Fst:
    # RFC 3339 full-date: date-fullyear "-" date-month "-" date-mday, the days "based on
    # month/year" (section 5.7): February 29 only in a leap year
    days = union([lit(f"{m:02d}-") + _two(1, 28 if m == 2 else 30 if m in (4, 6, 9, 11) else 31)
                  for m in range(1, 13)])
    return _n(_digit(), 4) + lit("-") + days | _leap_year() + lit("-02-29")


def _time() -> pynini.Fst:
    # RFC 3339 full-time: HH:MM:SS(.frac)? (Z / +-HH:MM), seconds up to 60 (leap second)
    partial = _two(0, 23) + lit(":") + _two(0, 59) + lit(":") + _two(0, 60) \
        + (lit(".") + _n(_digit(), 1, 9) + pynini.closure(_digit())).ques
    offset = _set("Zz") | _set("+-") + _two(0, 23) + lit(":") + _two(0, 59)
    return partial + offset


def _date_time() -> pynini.Fst:
    return _date() + _set("Tt") + _time()


def _dec_octet() -> pynini.Fst:
    return union([lit(str(v)) for v in range(256)])


def _ipv4() -> pynini.Fst:
    # RFC 3986 IPv4address: dec-octet "." dec-octet "." dec-octet "." dec-octet
    return _dec_octet() + _n(lit(".") + _dec_octet(), 3)


def _ipv6() -> pynini.Fst:
    # RFC 4291 section 2.2: eight h16 groups, "::" standing for one or more zero groups, and an
    # optional IPv4 tail in place of the last two groups.
    h16 = _n(_hex(), 1, 4)
    forms = []
    for tail_v4 in (False, True):
        width = 6 if tail_v4 else 8
        tail = _ipv4() if tail_v4 else None

        def seq(k: int) -> pynini.Fst:
            if k == 0:
                return lit("")
            return h16 + _n(lit(":") + h16, k - 1)

        full = seq(width)
        if tail is not None:
            full = full + lit(":") + tail
        forms.append(full)
        for left in range(width):
            for right in range(width - left):
                if left + right > width - 1:
                    continue
                body = seq(left) + lit("::") + seq(right)
                if tail is not None:
                    body = body + (lit(":") if right else lit("")) + tail
                forms.append(body)
    return union(forms)


def _label() -> pynini.Fst:
    # RFC 1123 label: letters, digits and hyphens, 1..63 long, no hyphen at either end
    ld = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9"))
    ldh = ld | lit("-")
    return ld + (_n(ldh, 0, 61) + ld).ques


def _hostname() -> pynini.Fst:
    label = optimize(_label(), stage="json format hostname")
    return label + pynini.closure(lit(".") + label)


def _email() -> pynini.Fst:
    # RFC 5321 Mailbox: Dot-string "@" (Domain / "[" IPv4 "]")
    atext = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9")) | _set("!#$%&'*+/=?^_`{|}~-")
    dot_string = pynini.closure(atext, 1)
    local = dot_string + pynini.closure(lit(".") + dot_string)
    return local + lit("@") + (_hostname() | lit("[") + _ipv4() + lit("]"))


def _uuid() -> pynini.Fst:
    # RFC 4122: 8-4-4-4-12 hex digits
    return (_n(_hex(), 8) + lit("-") + _n(_hex(), 4) + lit("-") + _n(_hex(), 4) + lit("-")
            + _n(_hex(), 4) + lit("-") + _n(_hex(), 12))


def _uri_chars() -> pynini.Fst:
    # RFC 3986: unreserved / reserved (gen-delims and sub-delims) / pct-encoded
    plain = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9")) \
        | _set("-._~:/?#[]@!$&'()*+,;=")
    return pynini.closure(plain | lit("%") + _hex() + _hex())


def _scheme() -> pynini.Fst:
    return chars(_rng("a", "z"), _rng("A", "Z")) + pynini.closure(
        chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9")) | _set("+-."))


def _uri() -> pynini.Fst:
    # RFC 3986 URI: scheme ":" followed by URI characters (the hier-part's structure is not
    # checked beyond its alphabet)
    return _scheme() + lit(":") + _uri_chars()


def _uri_reference() -> pynini.Fst:
    return _uri_chars()


def _duration() -> pynini.Fst:
    # RFC 3339 appendix A (ISO 8601): P(nY)(nM)(nD)(T(nH)(nM)(nS)) with at least one part, or PnW
    num = pynini.closure(_digit(), 1)

    def parts(letters: str) -> pynini.Fst:
        # one or more of the units in order, each optional
        out = None
        for i in range(len(letters)):
            first = num + lit(letters[i])
            rest = lit("")
            for c in letters[i + 1:]:
                rest = rest + (num + lit(c)).ques
            alt = first + rest
            out = alt if out is None else out | alt
        assert out is not None
        return out

    time = lit("T") + parts("HMS")
    return lit("P") + (parts("YMD") + time.ques | time | num + lit("W"))


def _json_pointer() -> pynini.Fst:
    # RFC 6901: ("/" (unescaped / "~0" / "~1")*)*
    unescaped = any_char()
    unescaped = pynini.difference(unescaped, _set("/~"))
    token = pynini.closure(unescaped | lit("~0") | lit("~1"))
    return pynini.closure(lit("/") + token)


_BUILDERS: dict[str, Callable[[], pynini.Fst]] = {
    "date": _date, "time": _time, "date-time": _date_time, "ipv4": _ipv4, "ipv6": _ipv6,
    "hostname": _hostname, "email": _email, "uuid": _uuid, "uri": _uri,
    "uri-reference": _uri_reference, "duration": _duration, "json-pointer": _json_pointer,
}
CHECKED_FORMATS = tuple(sorted(_BUILDERS))


@cache
def _format(name: str) -> pynini.Fst:
    return optimize(_BUILDERS[name](), stage=f"json format {name}")


def format_fst(name: str) -> pynini.Fst | None:
    """The decoded strings of format ``name``, or None where it is an annotation only."""
    if name not in _BUILDERS:
        return None
    return _format(name).copy()
