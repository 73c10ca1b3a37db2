"""Bad input gets a clear error that names the input and the fix, and leaves nothing behind."""
from __future__ import annotations

import pytest

import fstbeam
from fstbeam.cli.compile_constraints import main as cli_main
from fstbeam.compiler.api import compile_constraints
from fstbeam.compiler.spec import Phrase
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import GrammarError, SpecError, TokenizerError, UnsatisfiableConstraintError

PIECES = ["a", "b", "c", " ", "ab", "ca", ".", "x", "y"]


def vocab():
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)])


def test_empty_word_list_file(tmp_path):
    f = tmp_path / "w.txt"
    f.write_text("\n  \n# only a comment\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"w\.txt has no words"):
        fstbeam.compile_constraints(words=f, tokenizer=vocab())


def test_missing_word_list_file(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        fstbeam.compile_constraints(words=tmp_path / "nope.txt", tokenizer=vocab())


def test_non_utf8_word_list_names_line_and_offset(tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes(b"ab\nca\n\xff\xfe\n")
    with pytest.raises(SpecError, match=r"w\.txt is not UTF-8: byte 0xff at byte offset 6 \(line 3\)"):
        fstbeam.compile_constraints(words=f, tokenizer=vocab())


def test_unknown_cefr_level():
    with pytest.raises(SpecError, match="unknown CEFR level 'D1'"):
        fstbeam.compile_constraints(cefr="D1", tokenizer=vocab())


def test_words_and_cefr_together():
    with pytest.raises(SpecError, match="either words= or cefr="):
        fstbeam.compile_constraints(words=["a"], cefr="A1", tokenizer=vocab())


def test_contradictory_prefix_and_word_list():
    with pytest.raises(UnsatisfiableConstraintError, match="starts with the prefix 'xy'") as e:
        fstbeam.compile_constraints(words=["ab", "ca"], prefix="xy", tokenizer=vocab(), case_variants=False)
    assert "prefix" in e.value.parts


def test_phrase_outside_the_word_list():
    with pytest.raises(UnsatisfiableConstraintError, match="phrase 'xy'"):
        fstbeam.compile_constraints(words=["ab", "ca"], phrases=["xy"], tokenizer=vocab(), case_variants=False)


def test_avoid_list_that_blocks_everything():
    # (anywhere: with word boundaries "ab-ab" would be left, one word by the boundary rule)
    with pytest.raises(UnsatisfiableConstraintError, match="blocks every text"):
        fstbeam.compile_constraints(words=["ab"], avoid=[Phrase("ab", word_boundary=False)], tokenizer=vocab(),
                                    case_variants=False, digits=False)


def test_word_list_no_token_can_spell():
    with pytest.raises(UnsatisfiableConstraintError, match="no token sequence"):
        fstbeam.compile_constraints(words=["zzz"], tokenizer=vocab(), case_variants=False)


def test_empty_phrase_and_prefix():
    with pytest.raises(SpecError, match="is empty"):
        fstbeam.compile_constraints(phrases=[" "], tokenizer=vocab())
    with pytest.raises(SpecError, match="prefix"):
        fstbeam.compile_constraints(prefix="", tokenizer=vocab())


def test_cli_exit_codes(tmp_path, capsys):
    # a bad flag value is a usage error (exit 2), found before any tokenizer is loaded
    assert cli_main(["compile", "--cefr", "Q9", "-o", str(tmp_path / "o")]) == 2
    assert "unknown CEFR level" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert cli_main(["compile"]) == 2  # missing -o
    assert cli_main(["inspect", str(tmp_path / "missing.fstbeam")]) == 1


@pytest.mark.parametrize("phrases, avoid", [
    (["cat"], ["cat"]),
    (["the cat"], ["cat"]),  # every text containing "the cat" contains "cat" at word boundaries
    (["concatenate"], [Phrase("cat", word_boundary=False)]),  # inside words
])
def test_phrase_and_avoid_contradictions_are_compile_errors(phrases, avoid):
    v = Vocab.from_dict(["a", "c", "t", " ", "n", "o", "e", "h", "cat", "the"], eos_ids=[10])
    with pytest.raises(UnsatisfiableConstraintError, match="cannot appear without one of the avoid phrases"):
        compile_constraints(tokenizer=v, phrases=phrases, avoid=avoid)


def test_avoid_at_word_boundaries_does_not_block_a_longer_word():
    v = Vocab.from_dict(["a", "c", "t", " ", "n", "o", "e", "h", "cat", "the"], eos_ids=[10])
    cc = compile_constraints(tokenizer=v, phrases=["concatenate"], avoid=["cat"])
    assert [a.text for a in cc.phrases] == ["concatenate"]


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(words=5), SpecError, "file path or a list of words"),
    (dict(words=b"cat"), SpecError, "bytes"),  # used to become {"99", "97", "116"}
    (dict(words=["ab", 3]), SpecError, r"words\[1\] must be text"),
    (dict(phrases=5), SpecError, "phrases"),
    (dict(words=["ab"], grammar_params="level=A1"), GrammarError, "must be a dict"),
    (dict(words=["ab"], grammar_params={"level": "A1"}), SpecError, "give grammar= too"),  # used to be ignored
])
def test_wrong_api_types_are_project_errors_with_the_fix(kwargs, error, match):
    with pytest.raises(error, match=match):
        compile_constraints(tokenizer=vocab(), **kwargs)


def test_a_transducer_as_grammar_is_refused():
    import pynini

    t = pynini.cross(pynini.accep("ab", token_type="byte"), pynini.accep("ca", token_type="byte"))
    with pytest.raises(GrammarError, match="transducer"):
        compile_constraints(tokenizer=vocab(), grammar=t)


def test_tokenizer_json_holding_a_list_is_a_tokenizer_error(tmp_path):
    (tmp_path / "tokenizer.json").write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(TokenizerError, match="not a Hugging Face tokenizer.json"):
        compile_constraints(tokenizer=tmp_path, words=["ab"])
    (tmp_path / "tokenizer.json").write_text('{"model": {"vocab": {"a": "x"}}}', encoding="utf-8")
    with pytest.raises(TokenizerError):
        compile_constraints(tokenizer=tmp_path, words=["ab"])


def test_word_list_with_a_utf8_bom_keeps_its_first_word(tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes("\ufeffab\nca\n".encode("utf-8"))
    from fstbeam.compiler.spec import read_word_file

    assert read_word_file(f).words == ("ab", "ca")


def test_device_files_are_refused_not_read():
    """/dev/zero as a word list or tokenizer used to be read until memory ran out."""
    with pytest.raises(SpecError, match="device"):
        compile_constraints(tokenizer=vocab(), words="/dev/zero")
    with pytest.raises(TokenizerError, match="device"):
        compile_constraints(tokenizer="/dev/zero", words=["ab"])


def test_word_list_from_a_pipe_still_works(tmp_path):
    """Process substitution (``--words <(grep ...)``) gives a FIFO: that stays allowed."""
    import os
    import threading

    fifo = tmp_path / "words"
    os.mkfifo(fifo)
    t = threading.Thread(target=lambda: fifo.write_text("ab\nca\n"), daemon=True)
    t.start()
    cc = compile_constraints(tokenizer=vocab(), words=str(fifo), case_variants=False)
    t.join(5)
    assert cc.spec["words"]["count"] == 2
