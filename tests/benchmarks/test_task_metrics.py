"""The text checks of benchmarks/bench_tasks.py against hand-built examples."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import task_metrics as tm  # noqa: E402


@pytest.mark.parametrize("text,expected", [
    ("A dog runs. It jumps!", ["A dog runs.", "It jumps!"]),
    ("The dog, e.g. a terrier, runs.", ["The dog, e.g. a terrier, runs."]),
    ("Sie können z.B. angeben, welche. Dann geht es.", ["Sie können z.B. angeben, welche.", "Dann geht es."]),
    ("Dr. Smith met J. Doe at 3.5 km. Then he left", ["Dr. Smith met J. Doe at 3.5 km.", "Then he left"]),
    ("Provider: 1. 2. 3. Provider", ["Provider: 1.", "2.", "3.", "Provider"]),
    ("He said \"Stop.\" Then he ran.", ["He said \"Stop.\"", "Then he ran."]),
    ("Wait... what? yes", ["Wait... what? yes"]),
    ("", []),
    ("   no end here", ["no end here"]),
])
def test_sentences(text, expected):
    assert tm.sentences(text) == expected


@pytest.mark.parametrize("text,ends", [("A dog runs.", True), ("He asked why?\u201d", True), ("A dog runs", False),
                                        ("The end. ", True), ("He is stand-", False), ("", False)])
def test_ends_sentence(text, ends):
    assert tm.ends_sentence(text) is ends


def test_term_present_needs_word_boundaries_and_case():
    assert tm.term_present("Der Terminplan ist fertig.", "Terminplan")
    assert not tm.term_present("Die Terminplanung ist fertig.", "Terminplan")  # inside a longer word
    assert not tm.term_present("der terminplan", "Terminplan")
    assert tm.term_present("der terminplan", "Terminplan", case_sensitive=False)
    assert tm.term_present("(Terminplan)", "Terminplan")
    assert not tm.term_present("Terminplan2", "Terminplan")
    assert tm.term_present("El mantenimiento del sistema.", "mantenimiento")
    assert not tm.term_present("Ümantenimiento", "mantenimiento")  # a non-ASCII letter is a word letter
    # an apostrophe or hyphen between letters joins a word, as in WORD (and the decoder's rule)
    assert not tm.term_present("A dog runs in a fenced-in area.", "fenced")
    assert not tm.term_present("He jump's from a stair", "jump")
    assert tm.term_present("the 'fenced' area", "fenced") and tm.term_present("die E-Mail-Adresse", "E-Mail") is False
    assert tm.term_present("eine E-Mail.", "E-Mail")


def test_term_inside_translation_proper():
    src = "Maintenance planners can delete the schedule."  # one sentence
    out = "Planer können löschen. Terminplan: 1. 2. 3."
    assert tm.translation_proper(out, src) == "Planer können löschen."
    assert tm.term_inside(out, src, "löschen")
    assert not tm.term_inside(out, src, "Terminplan")  # tacked on after the translation
    two = "Open the file. Then save it."
    assert tm.term_inside("Öffnen Sie die Datei. Dann den Terminplan speichern. Terminplan", two, "Terminplan")
    assert tm.translation_proper("no sentence end", "Upload Field Fuel") == "no sentence end"


def test_coverage_by_lemma():
    assert tm.covered("A man ran across the fields.", "run")
    assert tm.covered("A man ran across the fields.", "field")
    assert tm.covered("The teams were running drills.", "drill")
    assert tm.covered("She is swimming.", "swim")
    assert not tm.covered("A man walks.", "run")
    assert not tm.covered("He is a runner.", "run")  # derivation, not inflection
    assert not tm.covered("He jump's from a stair.", "jump")  # met through punctuation is not the word


def test_inflections_and_meets_any():
    forms = tm.inflections("run")
    assert {"run", "runs", "ran", "running"} <= forms
    assert tm.meets_any("Running is fun.", ["run", "running"], sentence_case=True)
    assert not tm.meets_any("Running is fun.", ["run", "running"], sentence_case=False)
    assert not tm.meets_any("I like Running.", ["running"], sentence_case=True)  # capital only at a sentence start
    assert tm.meets_any("Stop. Running is fun.", ["running"], sentence_case=True)
    assert not tm.meets_any("reruns", ["runs"])
