"""JSON Schema `format`s as automata of the decoded string (before JSON escaping).

Each checked format follows its RFC (grammar in the comment). Formats that are not regular or
not listed here are annotations, as the specification allows: any string is accepted
(`FORMATS_AS_ANNOTATION` names the known ones; an unknown name is treated the same way).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pynini

from ....fst.optimize import optimize
from .lexical import any_char, chars, lit, repeat, union

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


def _label(more: pynini.Fst | None = None) -> pynini.Fst:
    # RFC 1123 label: letters, digits and hyphens, 1..63 long, no hyphen at either end
    ld = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9"))
    ld = ld | more if more is not None else ld
    ldh = ld | lit("-")
    return ld + (_n(ldh, 0, 61) + ld).ques


def _labels_of(label: pynini.Fst) -> pynini.Fst:
    label = optimize(label, stage="json format hostname")
    return label + pynini.closure(lit(".") + label)


def _hostname() -> pynini.Fst:
    return _labels_of(_label())


# Non-ASCII letters an IDNA2008 label takes with no contextual or bidi rule (PVALID, NFC, left
# to right): lowercase Latin-1 letters, Greek and Cyrillic small letters, Hiragana, Katakana,
# the Unicode 1.1 CJK ideographs, Hangul syllables
_IDN_LETTERS = ((0xDF, 0xF6), (0xF8, 0xFF), (0x3B1, 0x3C9), (0x430, 0x44F), (0x3041, 0x3096),
                (0x30A1, 0x30FA), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3))


def _idn_hostname() -> pynini.Fst:
    """RFC 5890's IDN host names, a subset that IDNA2008 (`idna.encode`, `jsonschema`'s check)
    always takes: LDH labels without ``--`` as their 3rd and 4th characters (those are
    reserved, A-labels among them), and labels of up to 10 characters that also hold the
    letters of `_IDN_LETTERS` beside lowercase ASCII (10 keep the A-label within 63 octets).
    Other scripts, marks and right-to-left labels, whose rules depend on their neighbours, are
    not taken."""
    ld = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9"))
    wide = chars(_rng("a", "z"), _rng("0", "9"), *_IDN_LETTERS)  # (a U-label's ASCII is lowercase)

    def no_reserved_hyphens(letter: pynini.Fst, hi: int) -> pynini.Fst:
        ldh = letter | lit("-")
        short = letter + (_n(ldh, 0, 1) + letter).ques  # 1..3 characters
        four = letter + ldh + ldh + letter  # (its 3rd and 4th: never "--")
        third_fourth = letter + ldh | lit("-") + letter
        return short | four | letter + ldh + third_fourth + _n(ldh, 0, hi - 5) + letter

    return _labels_of(no_reserved_hyphens(ld, 63) | no_reserved_hyphens(wide, 10))


def _relative_json_pointer() -> pynini.Fst:
    # draft-handrews-relative-json-pointer-01: non-negative-integer ("#" / json-pointer)
    integer = lit("0") | chars(_rng("1", "9")) + pynini.closure(_digit())
    return integer + (lit("#") | _json_pointer())


def _ip_literal_v6() -> pynini.Fst:
    """An IPv6 address inside an address literal (a URI's or an email's ``[...]``), checked by
    its alphabet: RFC 4291's grammar (``ipv6``) would put ~150 states, six times that once
    JSON-escaped, into every URI and email string for a host form models rarely write (a schema
    with one uri was 2x slower to compile). A documented approximation."""
    return pynini.closure(_hex() | _set(":."), 2)


def _email(idn: bool = False) -> pynini.Fst:
    # RFC 5321 Mailbox: Local-part "@" (Domain / address-literal); ``idn``: RFC 6531's, whose
    # atext, qtext and domain labels also take any non-ASCII character (its U-labels are not
    # checked further: `jsonschema` asks an idn-email for an "@" only)
    #   Local-part = Dot-string / Quoted-string; a quoted string holds printable ASCII, with
    #   '"' and '\\' only as quoted pairs
    #   address-literal = "[" (IPv4-address-literal / "IPv6:" IPv6-addr) "]" (the general
    #   form, a registered tag, is left out: no tag is registered)
    utf8 = pynini.difference(any_char(), chars((0, 127))) if idn else None
    atext = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9")) | _set("!#$%&'*+/=?^_`{|}~-")
    atext = atext | utf8 if utf8 is not None else atext
    dot_string = pynini.closure(atext, 1)
    dotted = dot_string + pynini.closure(lit(".") + dot_string)
    qtext = chars((32, 33), (35, 91), (93, 126))
    qtext = qtext | utf8 if utf8 is not None else qtext
    quoted = lit('"') + pynini.closure(qtext | lit("\\") + chars((32, 126))) + lit('"')
    literal = lit("[") + (_ipv4() | lit("IPv6:") + _ip_literal_v6()) + lit("]")
    domain = _hostname() if utf8 is None else _labels_of(_label(utf8))
    return (dotted | quoted) + lit("@") + (domain | literal)


def _idn_email() -> pynini.Fst:
    return _email(idn=True)


def _uuid() -> pynini.Fst:
    # RFC 4122: 8-4-4-4-12 hex digits
    return (_n(_hex(), 8) + lit("-") + _n(_hex(), 4) + lit("-") + _n(_hex(), 4) + lit("-")
            + _n(_hex(), 4) + lit("-") + _n(_hex(), 12))


# RFC 3987's ucschar (an IRI's unreserved characters beyond ASCII) and iprivate (its query's)
_UCSCHAR = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF),
            *((p << 16, (p << 16) + 0xFFFD) for p in range(1, 15)))
_IPRIVATE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _uri_parts(iri: bool = False) -> dict[str, pynini.Fst]:
    """RFC 3986 section 3 and appendix A, the rules a URI and a relative reference share;
    ``iri``: RFC 3987's, whose unreserved characters take `_UCSCHAR` and whose query takes
    `_IPRIVATE` too."""
    unreserved = chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9"), *(_UCSCHAR if iri else ())) | _set("-._~")
    pct = lit("%") + _hex() + _hex()
    sub_delims = _set("!$&'()*+,;=")
    pchar = unreserved | pct | sub_delims | _set(":@")
    segment = pynini.closure(pchar)
    segment_nz = pynini.closure(pchar, 1)
    ip_future = _set("vV") + pynini.closure(_hex(), 1) + lit(".") \
        + pynini.closure(unreserved | sub_delims | lit(":"), 1)
    ip_literal = lit("[") + (_ip_literal_v6() | ip_future) + lit("]")
    reg_name = pynini.closure(unreserved | pct | sub_delims)  # IPv4address is one of these
    userinfo = pynini.closure(unreserved | pct | sub_delims | lit(":"))
    authority = (userinfo + lit("@")).ques + (ip_literal | reg_name) \
        + (lit(":") + pynini.closure(_digit())).ques
    rest = pynini.closure(lit("/") + segment)
    fragment = pynini.closure(pchar | _set("/?"))
    query = pynini.closure(pchar | _set("/?") | chars(*_IPRIVATE)) if iri else fragment
    tail = (lit("?") + query).ques + (lit("#") + fragment).ques
    return {
        "net": lit("//") + authority + rest,  # "//" authority path-abempty
        "absolute": lit("/") + (segment_nz + rest).ques,
        "rootless": segment_nz + rest,
        "noscheme": pynini.closure(unreserved | pct | sub_delims | lit("@"), 1) + rest,
        "tail": tail,
    }


def _scheme() -> pynini.Fst:
    return chars(_rng("a", "z"), _rng("A", "Z")) + pynini.closure(
        chars(_rng("a", "z"), _rng("A", "Z"), _rng("0", "9")) | _set("+-."))


def _uri(iri: bool = False) -> pynini.Fst:
    # RFC 3986 URI = scheme ":" hier-part ["?" query] ["#" fragment]
    #   hier-part = "//" authority path-abempty / path-absolute / path-rootless / path-empty
    # (RFC 3987 IRI: the same with `_uri_parts(iri=True)`)
    p = _uri_parts(iri)
    hier = p["net"] | p["absolute"] | p["rootless"] | lit("")
    return _scheme() + lit(":") + hier + p["tail"]


def _uri_reference(iri: bool = False) -> pynini.Fst:
    # RFC 3986 URI-reference = URI / relative-ref
    #   relative-ref = ("//" authority path-abempty / path-absolute / path-noscheme /
    #   path-empty) ["?" query] ["#" fragment]
    p = _uri_parts(iri)
    relative = (p["net"] | p["absolute"] | p["noscheme"] | lit("")) + p["tail"]
    return _uri(iri) | relative


def _iri() -> pynini.Fst:
    return _uri(iri=True)


def _iri_reference() -> pynini.Fst:
    return _uri_reference(iri=True)


def _duration() -> pynini.Fst:
    # RFC 3339 appendix A:
    #   duration = "P" (dur-date / dur-time / dur-week)
    #   dur-date = (dur-day / dur-month / dur-year) [dur-time]; dur-time = "T" (dur-hour /
    #   dur-minute / dur-second); dur-year = 1*DIGIT "Y" [dur-month]; dur-month = 1*DIGIT "M"
    #   [dur-day]; dur-hour = 1*DIGIT "H" [dur-minute]; dur-minute = 1*DIGIT "M" [dur-second]
    # so a unit may be left out only at the end of its run: P1Y2D and PT1H5S are not durations.
    num = pynini.closure(_digit(), 1)

    def run(letters: str) -> pynini.Fst:
        # "nA [nB [nC]]" starting at any of the letters
        out = None
        for i in range(len(letters)):
            alt = lit("")
            for c in reversed(letters[i + 1:]):
                alt = (num + lit(c) + alt).ques
            alt = num + lit(letters[i]) + alt
            out = alt if out is None else out | alt
        assert out is not None
        return out

    time = lit("T") + run("HMS")
    return lit("P") + (run("YMD") + time.ques | time | num + lit("W"))


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
    "idn-email": _idn_email, "idn-hostname": _idn_hostname, "relative-json-pointer": _relative_json_pointer,
    "iri": _iri, "iri-reference": _iri_reference,
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
