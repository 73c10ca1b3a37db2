"""bench_structured's own logic: the serialization order, the walk that checks an instance against an
engine's masks (on a tiny vocabulary, against a brute-force oracle), the fstbeam mask fill, the
percentiles, the stratified sample and the grouping of refusals."""
from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import structured_data as sd  # noqa: E402
import structured_engines as se  # noqa: E402
from structured_runner import reason  # noqa: E402

import fstbeam  # noqa: E402
from fstbeam.contract.vocab import Vocab  # noqa: E402


# ---- serialization --------------------------------------------------------------------------
def _own(value, schema):
    """The benchmark's own reading of the declared order (used where fstbeam's is unavailable)."""
    return json.dumps(sd.ordered(value, [schema], schema), separators=(",", ":"), ensure_ascii=False)


def test_keys_follow_the_declared_order_then_the_instance_order():
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"$ref": "#/$defs/inner"}},
              "allOf": [{"properties": {"c": {"type": "string"}}}],
              "$defs": {"inner": {"type": "object", "properties": {"y": {}, "x": {}}}}}
    value = {"z": 1, "a": {"x": 1, "w": 2, "y": "é"}, "c": "s", "b": 2}
    assert _own(value, schema) == '{"b":2,"a":{"y":"é","x":1,"w":2},"c":"s","z":1}'


def test_array_items_and_tuple_items_take_their_schemas():
    schema = {"type": "array", "prefixItems": [{"properties": {"q": {}, "p": {}}}], "items": {"properties": {"n": {}, "m": {}}}}
    value = [{"p": 1, "q": 2}, {"m": 1, "n": 2}]
    assert _own(value, schema) == '[{"q":2,"p":1},{"n":2,"m":1}]'
    draft4 = {"items": [{"properties": {"k": {}, "j": {}}}], "additionalItems": {"properties": {"s": {}, "r": {}}}}
    assert _own([{"j": 0, "k": 0}, {"r": 0, "s": 0}], draft4) == '[{"k":0,"j":0},{"s":0,"r":0}]'


def test_serialization_keeps_the_value_and_is_compact():
    rng = random.Random(3)
    schema = {"properties": {"k3": {"properties": {"k1": {}}}, "k0": {}}, "additionalProperties": {"properties": {"k2": {}}}}
    for _ in range(200):
        value = _random_json(rng, 3)
        for text in (sd.serialize(value, schema), _own(value, schema)):
            assert json.loads(text) == value
            assert text == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)  # no added spaces


def _random_json(rng: random.Random, depth: int):
    kind = rng.randrange(6 if depth else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-5, 5)
    if kind == 2:
        return rng.choice(["", "a b", "ü", "\"q\""])
    if kind == 3:
        return 1.5
    if kind == 4:
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(3))]
    keys = rng.sample([f"k{i}" for i in range(5)], rng.randrange(4))
    return {k: _random_json(rng, depth - 1) for k in keys}


def test_a_ref_cycle_does_not_loop():
    schema = {"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}}
    assert _own({"b": 1, "a": 2}, schema) == '{"b":1,"a":2}'


# ---- the walk -------------------------------------------------------------------------------
TOKENS = ["a", "b", "ab", "c", "bc", "abc"] + [f"<pad{i}>" for i in range(34)] + ["ca"]  # id 40 sits in the second word
LANG = {"abc", "ab", "cab", "bcca"}


class FiniteLanguage:
    """A toy engine over TOKENS: the state is the text so far; a token is allowed when the text
    stays a prefix of a word in LANG."""

    def __init__(self, broken_advance: bool = False) -> None:
        self.broken = broken_advance

    def start(self, lang):
        return ""

    def fill(self, text):
        row = np.zeros((len(TOKENS) + 31) // 32, np.int32)
        for t, piece in enumerate(TOKENS):
            if any(w.startswith(text + piece) for w in LANG):
                row[t >> 5] |= np.int32(1 << (t & 31)) if (t & 31) != 31 else np.int32(-(2**31))
        return row

    def advance(self, text, t):
        return None if self.broken else text + TOKENS[t]

    def accepting(self, text):
        return text in LANG


def test_walk_accepts_exactly_the_language():
    real = [0, 1, 2, 3, 4, 5, 40]
    for n in range(1, 4):
        for ids in itertools.product(real, repeat=n):
            text = "".join(TOKENS[t] for t in ids)
            ok, at, times = se.walk(FiniteLanguage(), LANG, ids)
            assert ok == (text in LANG), (ids, text)
            # stops at the first token after which no word is reachable
            first_bad = next((i for i in range(n) if not any(w.startswith("".join(TOKENS[t] for t in ids[: i + 1])) for w in LANG)), n)
            assert at == first_bad
            assert len(times) == min(n, first_bad + 1) and all(x >= 0 for x in times)


def test_a_token_the_matcher_refuses_after_its_mask_allowed_it_is_a_rejection():
    ok, at, _ = se.walk(FiniteLanguage(broken_advance=True), LANG, [2, 3])
    assert (ok, at) == (False, 0)


def test_token_allowed_reads_bit_t_of_word_t_over_32():
    row = np.zeros(3, np.int32)
    row[1] = np.int32(-(2**31))  # bit 31 of word 1: token 63
    row[2] = 1 << 4  # token 68
    assert [t for t in range(96) if se.token_allowed(row, t)] == [63, 68]


def test_fstbeam_mask_fill_sets_exactly_the_allowed_tokens():
    pieces = ["a", "b", "c", " ", "ab", " a", " b", "ca", ".", "b.", "ab "] + [f"x{i}" for i in range(60)]
    vocab = Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)], name="bench-structured-test")
    cc = fstbeam.compile_constraints(words=["ab", "ca", "b", "x7", "x59"], tokenizer=vocab, case_variants=False)
    eng = se.Fstbeam()
    h = cc.hard
    for s in range(h.num_states):
        eng.buf = np.full_like(h.mask_row(s)[0], -1)  # stale bits from an earlier row must not survive
        row = eng.fill((h, s))
        got = [t for t in range(cc.width) if se.token_allowed(row, t)]
        assert got == sorted(h.allowed_text_tokens(s).tolist())
        assert all((eng.advance((h, s), t) is not None) == (t in got) for t in range(len(pieces)))


# ---- statistics, sample, reasons ----------------------------------------------------------------
def test_percentile_matches_numpy_linear():
    rng = random.Random(0)
    for n in (1, 2, 7, 100):
        xs = [rng.random() for _ in range(n)]
        for q in (0, 50, 99, 100):
            assert abs(sd.percentile(xs, q) - float(np.percentile(xs, q))) < 1e-12
    assert sd.percentile([], 50) is None


def test_stratified_sample_keeps_each_sources_share():
    names = [f"A---{i}" for i in range(60)] + [f"B---{i}" for i in range(30)] + [f"C---{i}" for i in range(9)] + ["D---0"]
    pick = sd.stratified(names, 20, seed=1)
    assert len(pick) == 20 and len(set(pick)) == 20
    counts = {s: sum(n.startswith(s + "---") for n in pick) for s in "ABCD"}
    assert counts == {"A": 12, "B": 6, "C": 1, "D": 1}
    assert pick == sd.stratified(names, 20, seed=1) and pick != sd.stratified(names, 20, seed=2)
    assert sd.stratified(names, None) == sorted(names)


def test_reasons_group_the_same_refusal():
    a = reason(ValueError("Unimplemented keys: [\"not\"] at /properties/a/items/0"))
    b = reason(ValueError("Unimplemented keys: [\"not\"] at /properties/b"))
    assert a == b == 'ValueError: Unimplemented keys: ["not"] at <path>'
    c = reason(SyntaxError("unknown format 'date time' in 'properties/x': {\"type\": 1}"))
    d = reason(SyntaxError("unknown format 'a b' in 'properties/y': {}"))
    assert c == d == "SyntaxError: unknown format <x> in <x>: {...}"
    assert reason("time-out (> 30 s)") == "time-out (> N s)"
