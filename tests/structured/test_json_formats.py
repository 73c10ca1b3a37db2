"""The formats whose checks live in other packages (`idna` for idn-hostname, `jsonschema`'s
checker for idn-email) or in a one-line rule (relative-json-pointer): random texts of each
format's automaton must pass the independent check, and hand-picked texts on both sides."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import idna
import jsonschema
import pytest
from regex_oracle import accepts

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.formats import format_fst
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from automaton_walks import random_texts  # noqa: E402

# draft-handrews-relative-json-pointer-01, written as a Python regex
RJP = re.compile(r"(0|[1-9][0-9]*)(#|(/([^/~]|~[01])*)*)", re.S)


def _idna_takes(text: str) -> bool:
    try:
        idna.encode(text)
    except idna.IDNAError:
        return False
    return True


def _idn_email(text: str) -> bool:
    return jsonschema.Draft202012Validator.FORMAT_CHECKER.conforms(text, "idn-email")


@pytest.mark.parametrize("fmt,check", [("idn-hostname", _idna_takes), ("idn-email", _idn_email),
                                       ("relative-json-pointer", lambda t: RJP.fullmatch(t) is not None)])
def test_random_texts_of_the_format_pass_the_independent_check(fmt, check):
    texts = [t.decode("utf-8") for t in random_texts(fst_to_dfa(format_fst(fmt)), 600, seed=7)]
    assert len(set(texts)) > 300
    assert [t for t in texts if not check(t)] == []


@pytest.mark.parametrize("fmt,good,bad", [
    ("idn-hostname", ["실례.테스트", "example.com", "a-b-c", "ab-d", "é.com", "北京.中国", "Example.COM", "a" * 63],
     # (the last two are IDNA's but left out of the subset: right-to-left, and over 10 characters)
     ["ab--cd", "xn--abc", "abc-", "-a", "ÉCOLE.fr", "a_b", "a" * 64, "ا.com", "北京北京北京北京北京北"]),
    ("idn-email", ["실례@실례.테스트", "joe.bloggs@example.com", "ü@ü.de", '"ü x"@y.z'],
     ["2962", "a@", "@b.c", "a..b@c.d"]),
    ("relative-json-pointer", ["1", "0/foo/bar", "2/0/baz/1/zip", "0#", "120/foo/bar", "0/a~1b"],
     ["/foo/bar", "-1/foo/bar", "+1/foo/bar", "0##", "01/a", "01#", "", "0/a~2"]),
    # RFC 3987: URIs whose unreserved characters go past ASCII, private-use ones in the query only
    ("iri", ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "http://例え.テスト/パス", "urn:ünïcödé", "http://a/?\ue000"],
     ["/abc", "http:// ƒøø.com", "http://2001:0db8:85a3::7334", "\\\\WINDOWS\\filëßåré", "http://a/#\ue000",
      "http://a/\ue000"]),
    ("iri-reference", ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "//ƒøø.ßår/?∂éœ=πîx#πîüx", "/âππ", "âππ", "#ƒrägmênt", ""],
     ["\\\\WINDOWS\\filëßåré", "#ƒräg\\mênt", "a b"]),
])
def test_formats_on_both_sides(fmt, good, bad):
    fst = json_schema_fst({"type": "string", "format": fmt})
    for s in good:
        assert accepts(fst, json.dumps(s, ensure_ascii=False)), s
        assert fmt != "idn-hostname" or _idna_takes(s), s  # (the examples themselves are right)
    for s in bad:
        assert not accepts(fst, json.dumps(s, ensure_ascii=False)), s
