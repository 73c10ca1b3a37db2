"""The grammar registry: discovery, parameters, bad inputs, hashing, combining."""
from __future__ import annotations

import pytest

from fstbeam import grammars
from fstbeam.errors import GrammarError, UnsatisfiableConstraintError
from fstbeam.fst.inspect import accepts
from fstbeam.grammars.cases import check_case, read_cases

SHIPPED = {"cefr", "dates", "inflection", "numbers", "terminology"}

SMALL = """
    import pynini
    def build(word: str = "hello"):
        return pynini.accep(word)
"""


# --------------------------------------------------------------------------- discovery


def test_shipped_grammars_are_listed():
    assert SHIPPED <= set(grammars.list_grammars())


def test_a_new_folder_is_listed_without_editing_anything(grammar_dir):
    grammar_dir("greeting", SMALL)
    assert "greeting" in grammars.list_grammars()
    built = grammars.build("greeting")
    assert accepts(built.language, "hello") and not accepts(built.language, "hell")
    assert built.name == "greeting" and dict(built.params) == {"word": "hello"}


def test_folders_without_grammar_py_and_lib_are_not_grammars(grammar_dir, tmp_path):
    (tmp_path / "grammars" / "notes").mkdir()
    assert "notes" not in grammars.list_grammars()
    assert "lib" not in grammars.list_grammars()


def test_unknown_grammar_lists_the_known_ones():
    with pytest.raises(GrammarError, match=r"unknown grammar 'cefrr'.*known grammars: .*cefr"):
        grammars.get("cefrr")


def test_a_name_defined_twice_is_an_error(grammar_dir):
    grammar_dir("numbers", SMALL)
    with pytest.raises(GrammarError, match="defined twice"):
        grammars.get("numbers")


def test_a_grammar_that_fails_to_import_names_the_file(grammar_dir):
    grammar_dir("broken", "import no_such_module_xyz\ndef build():\n    pass\n")
    with pytest.raises(GrammarError, match=r"grammar 'broken'.*grammar.py failed to import"):
        grammars.get("broken")


def test_a_grammar_without_build_is_an_error(grammar_dir):
    grammar_dir("nobuild", "X = 1\n")
    with pytest.raises(GrammarError, match=r"defines no build"):
        _ = grammars.get("nobuild").params


# --------------------------------------------------------------------------- parameters


def test_unknown_parameter_lists_the_valid_ones():
    with pytest.raises(GrammarError) as err:
        grammars.build("cefr", lvl="A1")
    msg = str(err.value)
    assert "no parameter 'lvl'" in msg and "level" in msg and "names" in msg


def test_bad_parameter_value_lists_the_valid_values():
    with pytest.raises(GrammarError, match=r"bad value 'Z9' for parameter 'level'.*'A1'.*'C2'"):
        grammars.build("cefr", level="Z9")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("False", False), ("yes", True), ("0", False), (True, True)],
)
def test_string_values_are_converted_by_annotation(value, expected):
    g = grammars.get("numbers")
    assert g.normalize_params({"decimals": value})["decimals"] is expected


def test_literal_values_fold_case():
    assert grammars.get("cefr").normalize_params({"level": "a2"})["level"] == "A2"


def test_bad_bool_and_missing_file():
    g = grammars.get("numbers")
    with pytest.raises(GrammarError, match="expected true or false"):
        g.normalize_params({"decimals": "maybe"})
    with pytest.raises(GrammarError, match="no such file"):
        grammars.get("terminology").normalize_params({"path": "/no/such/terms.tsv"})


def test_optional_path_accepts_none():
    values = grammars.get("inflection").normalize_params({"irregular": "none"})
    assert values["irregular"] is None


def test_required_parameter(grammar_dir):
    grammar_dir("needs", "import pynini\ndef build(word: str):\n    return pynini.accep(word)\n")
    with pytest.raises(GrammarError, match=r"needs parameter 'word'"):
        grammars.build("needs")
    assert accepts(grammars.build("needs", word="hi").language, "hi")


def test_parse_params():
    assert grammars.parse_params(["level=A2", "names=a=b.txt"]) == {"level": "A2", "names": "a=b.txt"}
    with pytest.raises(GrammarError, match="key=value"):
        grammars.parse_params(["level"])
    with pytest.raises(GrammarError, match="given twice"):
        grammars.parse_params(["a=1", "a=2"])


def test_usage_shows_parameters_and_defaults():
    text = grammars.get("numbers").usage()
    assert text.startswith("numbers: ") and "grouping" in text and "default optional" in text


# --------------------------------------------------------------------------- bad data


def test_tsv_with_wrong_column_count_names_file_and_line(tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("# comment\ne-mail\temail\tyes\textra\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"terms.tsv:2: expected 1 to 3 tab-separated columns"):
        grammars.build("terminology", path=str(terms))


def test_non_utf8_data_file_names_file_and_byte_offset(tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_bytes(b"e-mail\temail\nna\xefve\tnaive\n")
    with pytest.raises(GrammarError, match=r"terms.tsv is not UTF-8: byte 0xef at byte offset 15 \(line 2\)"):
        grammars.build("terminology", path=str(terms))


def test_bad_value_in_a_data_file_names_file_and_line(tmp_path):
    lemmas = tmp_path / "lemmas.tsv"
    lemmas.write_text("cat\tnoun\ngo\tverbb\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"lemmas.tsv:2: unknown class 'verbb'.*valid classes: noun"):
        grammars.build("inflection", lemmas=str(lemmas))


def test_forbidden_variant_inside_the_term_is_an_error(tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("sign in\tsign\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"terms.tsv:1: forbidden variant 'sign' occurs inside the term"):
        grammars.build("terminology", path=str(terms))


def test_a_grammar_that_raises_is_wrapped_with_its_name(grammar_dir):
    grammar_dir("crash", "def build(n: int = 3):\n    return 1 / 0\n")
    with pytest.raises(GrammarError, match=r"grammar crash\(n=3\) failed while building: ZeroDivisionError") as err:
        grammars.build("crash")
    assert isinstance(err.value.__cause__, ZeroDivisionError)


def test_an_empty_language_is_unsatisfiable(grammar_dir):
    grammar_dir("empty", "import pynini\ndef build():\n    return pynini.accep('a') - pynini.accep('a')\n")
    with pytest.raises(UnsatisfiableConstraintError, match=r"grammar empty\(\) accepts no text"):
        grammars.build("empty")


def test_a_phrase_that_is_also_avoided_is_unsatisfiable(grammar_dir):
    grammar_dir(
        "clash",
        "from fstbeam.grammars import GrammarParts\n"
        "def build():\n    return GrammarParts(phrases=('a b',), avoid=('a b',))\n",
    )
    with pytest.raises(UnsatisfiableConstraintError, match="must appear and must be avoided"):
        grammars.build("clash")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import pynini\ndef build():\n    return pynini.cross('a', 'b')\n", "is a transducer"),
        ("import pynini\ndef build():\n    return pynini.accep('€', token_type='utf8')\n", "not a byte label"),
        ("def build():\n    return 'hello'\n", "returned str"),
    ],
    ids=["transducer", "utf8-labels", "not-an-fst"],
)
def test_a_wrong_result_type_is_explained(grammar_dir, code, message):
    grammar_dir("wrong", code)
    with pytest.raises(GrammarError, match=message):
        grammars.build("wrong")


# --------------------------------------------------------------------------- results, cache, hash


def test_build_is_cached_and_returns_a_private_copy():
    a = grammars.build("numbers", mode="only")
    b = grammars.build("numbers", mode="only")
    assert a.cache_key == b.cache_key
    a.language.delete_states()  # mutating one result leaves the next one intact
    c = grammars.build("numbers", mode="only")
    assert accepts(c.language, "42")


def test_source_hash_follows_data_files(grammar_dir):
    folder = grammar_dir(
        "fromfile",
        """
        from pathlib import Path
        from fstbeam.grammars.lib.tsv import tsv_acceptor
        def build(words: Path = Path(__file__).parent / "data" / "words.tsv"):
            return tsv_acceptor(words)
        """,
        files={"data/words.tsv": "cat\n"},
    )
    first = grammars.build("fromfile")
    (folder / "data" / "words.tsv").write_text("dog\n", encoding="utf-8")
    second = grammars.build("fromfile")
    assert first.source_hash != second.source_hash
    assert accepts(second.language, "dog") and not accepts(second.language, "cat")


def test_source_hash_covers_files_given_as_parameters(tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("e-mail\temail\n", encoding="utf-8")
    first = grammars.build("terminology", path=str(terms))
    terms.write_text("sign in\tlog in\n", encoding="utf-8")
    second = grammars.build("terminology", path=str(terms))
    assert first.source_hash != second.source_hash
    assert second.phrases == ("sign in",)


def test_describe_and_params():
    built = grammars.build("dates", mode="only", formats="iso")
    assert built.describe().startswith("dates(mode=only, formats=iso, ordinals=True")
    assert built.params["mode"] == "only" and built.phrases == () and built.avoid == ()


def test_combine_intersects_languages_and_joins_phrases():
    both = grammars.combine([grammars.build("inflection"), grammars.build("numbers"), grammars.build("terminology")])
    assert both.name == "inflection+numbers+terminology"
    assert accepts(both.language, "The cats")
    assert both.phrases == ("e-mail", "sign in")
    assert "email" in both.avoid


def test_combine_without_common_text_is_unsatisfiable():
    only_numbers = grammars.build("numbers", mode="only", words=False)
    only_dates = grammars.build("dates", mode="only")
    with pytest.raises(UnsatisfiableConstraintError, match="no text in common"):
        grammars.combine([only_numbers, only_dates])


# --------------------------------------------------------------------------- golden case files


def test_cases_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "cases.tsv"
    bad.write_text("hello\taccept\nhello\tmaybe\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"cases.tsv:2: second column must be accept or reject"):
        read_cases(bad, "x")
    bad.write_text("hello\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"cases.tsv:1: expected text<TAB>accept\|reject"):
        read_cases(bad, "x")
    bad.write_bytes(b"caf\xe9\taccept\n")
    with pytest.raises(GrammarError, match=r"byte offset 3"):
        read_cases(bad, "x")


def test_cases_params_and_escapes(tmp_path):
    path = tmp_path / "cases.tsv"
    path.write_text('# params: a=1 b="two words"\nx\\ty\\\\\taccept\tnote\n# params:\n z \treject\n', encoding="utf-8")
    first, second = read_cases(path, "g")
    assert first.params == {"a": "1", "b": "two words"} and first.text == "x\ty\\" and first.note == "note"
    assert second.params == {} and second.text == " z " and not second.expect and second.line == 4


def test_a_failing_case_shows_file_line_and_longest_accepted_prefix(grammar_dir):
    folder = grammar_dir(
        "hello",
        SMALL,
        files={"cases.tsv": "hello\taccept\nhelp\taccept\twrong on purpose\nhello\treject\n"},
    )
    cases = read_cases(folder / "cases.tsv", "hello")
    assert check_case(cases[0]) is None
    msg = check_case(cases[1])
    assert f"{folder / 'cases.tsv'}:2" in msg
    assert "expected accept, got reject for 'help'" in msg
    assert "longest accepted prefix: 'hel'; next possible: 'l'" in msg
    assert "wrong on purpose" in msg
    assert "expected reject, got accept" in check_case(cases[2])


# --------------------------------------------------------------------------- reports for the CLI


def test_inspect_grammar_report(tmp_path):
    text, code = grammars.inspect_grammar(
        "numbers", ["mode=only"], sample=3, check=["42", "4 2"], cases=True, draw=tmp_path / "n.dot",
        max_draw_states=1000,
    )
    assert code == 1  # "4 2" is rejected
    assert "grammar     numbers(mode=only" in text and "shortest accepted strings (3)" in text
    assert "check       '42': accepted" in text and "check       '4 2': rejected: accepted up to '4'" in text
    assert "golden cases pass" in text and (tmp_path / "n.dot").is_file()


def test_inspect_grammar_without_language_and_list_text():
    text, code = grammars.inspect_grammar("terminology", {}, check=["Please sign in to read your e-mail."])
    assert code == 0 and "phrase      'e-mail'" in text and "avoid       'email'" in text
    listing = grammars.list_text()
    assert all(f"{name}: " in listing for name in SHIPPED) and "--param level" in listing
