"""AnyOf, ordered and sentence-case constraints through the decoder: the Python API, the
per-request path, ``compile-constraints``, ``fstbeam generate`` and its JSONL input, each against
brute force over every output on a tiny vocabulary; and per-input terms on a seq2seq model."""
from __future__ import annotations

import json
import re

import pytest
import torch
from test_cli import model_dir  # noqa: F401  (the tiny saved model fixture)

from fstbeam.compiler.light.alternatives import AnyOf
from fstbeam.compiler.spec import Phrase
from fstbeam.runtime.search.engine import Request, SearchConfig, SearchEngine
from fstbeam.runtime.search.tables import InputConstraints

from rt_helpers import StubLM, brute_force, tiny_t5, tiny_vocab
from rt_reference import reference_search

TOKENS = ["<eos>", "a", "b", " ", "ab", " a", " b", "c", ".", " c", "ba", "a ", "A", " A", "<x>"]
W = r"[A-Za-z0-9\x80-\xff]"


def has(text: str, phrase: str) -> bool:
    """Independent oracle: ``phrase`` at word boundaries (regex look-arounds)."""
    return re.search(rf"(?<!{W}){re.escape(phrase)}(?!{W})", text) is not None


SPECS = {
    # name: (compile kwargs, oracle on the output text)
    "anyof": (dict(words=["a", "b", "c", "ab"], phrases=[["b a", "c"]]), lambda t: has(t, "b a") or has(t, "c")),
    "anyof-prefix-alt": (dict(phrases=[AnyOf("ab", "a")]), lambda t: has(t, "ab") or has(t, "a")),
    "ordered": (dict(phrases=["c", "a"], ordered=True),
                lambda t: any(has(t[:m.start()], "c") and has(t[m.start():], "a") for m in re.finditer("a", t))),
    "sentence": (dict(phrases=[Phrase("a b", sentence_case=True)]),
                 lambda t: has(t, "a b") or re.search(r"(^|[.!?])\s*A b(?![A-Za-z0-9])", t) is not None),
}


@pytest.fixture(scope="module")
def setup():
    from fstbeam.compiler.api import compile_constraints, with_request

    v = tiny_vocab(TOKENS)
    api = {n: compile_constraints(tokenizer=v, **kw) for n, (kw, _) in SPECS.items()}
    base = compile_constraints(tokenizer=v, words=["a", "b", "c", "ab", "A"])
    req = {n: with_request(base, phrases=kw["phrases"], ordered=kw.get("ordered", False))
           for n, (kw, _) in SPECS.items() if "words" not in kw and n != "anyof-prefix-alt"}
    return v, api, req


def run(adapter, prompts, ccs, **cfg):
    eng = SearchEngine(adapter, SearchConfig(**cfg), eos_ids=[0], device="cpu")
    reqs = [Request(i, p, InputConstraints.from_compiled(c)) for i, (p, c) in enumerate(zip(prompts, ccs))]
    return sorted(eng.run(reqs), key=lambda r: r.index)


def check_against_brute_force(v, lm, prompts, ccs, oracles, L=3):
    res = run(lm, prompts, ccs, beam_size=v.width ** L, max_new_tokens=L, batch_size=2)
    for r, cc, oracle in zip(res, ccs, oracles):
        [(_, lp, toks, eos)] = brute_force(lm.logprobs, prompts[r.index], V=v.width, L=L, eos=[0], matcher_factory=cc.matcher)
        h = r.hypotheses[0]
        assert h.satisfied and h.tokens == toks and h.eos == eos
        assert h.logprob == pytest.approx(lp, abs=1e-4)
        assert oracle(b"".join(v.token_bytes[t] for t in toks).decode()), (cc.spec, toks)


@pytest.mark.parametrize("eos_bias", [0.5])
def test_api_wide_beam_equals_brute_force(setup, eos_bias):
    v, api, _ = setup
    lm = StubLM(v.width, eos=[0], eos_bias=eos_bias)
    names = list(SPECS)
    prompts = [[i + 1] for i in range(len(names))]
    check_against_brute_force(v, lm, prompts, [api[n] for n in names], [SPECS[n][1] for n in names])


def test_per_request_path_equals_brute_force(setup):
    v, _, req = setup
    lm = StubLM(v.width, eos=[0], eos_bias=1.0)
    names = list(req)
    oracles = [lambda t, o=SPECS[n][1]: o(t) and re.fullmatch(r"(A|a|b|c|ab|[ .])*", t) is not None for n in names]
    check_against_brute_force(v, lm, [[3], [5], [7]][: len(names)], [req[n] for n in names], oracles)


@pytest.mark.parametrize("k", [2, 3])
def test_narrow_beam_equals_the_plain_python_dba(setup, k):
    """AnyOf and ordered automata are ordinary light automata to DBA: the vectorized search
    equals the plain-Python reference search, banks and candidates included."""
    v, api, _ = setup
    lm = StubLM(v.width, eos=[0], eos_bias=-1.0)
    for i, name in enumerate(SPECS):
        [r] = run(lm, [[i + 2]], [api[name]], beam_size=k, max_new_tokens=5, batch_size=1, prune_threshold=None)
        best, _ = reference_search(lm.logprobs, [i + 2], api[name], V=v.width, eos=[0], k=k, L=5)
        assert r.hypotheses[0].tokens == best[0][1], name


def test_compile_constraints_cli_matches_the_api(model_dir, tmp_path):  # noqa: F811
    """--any-of / --ordered / --sentence-case build the same automata as the Python API."""
    import numpy as np

    from fstbeam import load_constraints
    from fstbeam.cli.compile_constraints import main
    from fstbeam.compiler.api import compile_constraints

    out = tmp_path / "x.fstbeam"
    assert main(["compile", "--tokenizer", str(model_dir), "--phrase", "the cat", "--any-of", "dog|a mat", "--ordered",
                 "--sentence-case", "-o", str(out), "--no-progress"]) == 0
    got = load_constraints(out, tokenizer=str(model_dir))
    want = compile_constraints(tokenizer=str(model_dir), ordered=True,
                               phrases=[Phrase("the cat", sentence_case=True), AnyOf("dog", "a mat", sentence_case=True)])
    assert len(got.phrases) == 1 and got.phrases[0].items == want.phrases[0].items
    for x, y in zip(got.phrases[0].tables().values(), want.phrases[0].tables().values()):
        np.testing.assert_array_equal(x, y)
    # an empty alternative: the request's check, before anything loads (a usage error)
    assert main(["compile", "--tokenizer", str(model_dir), "--any-of", "dog||cat", "-o", str(out)]) == 2


# ---- fstbeam generate and JSONL --------------------------------------------------------------
def test_generate_flags_any_of_and_ordered(model_dir, capsys):  # noqa: F811
    from fstbeam.cli.main import main

    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--any-of", "cat|dog", "--phrase", "mat",
                 "--ordered", "--beam", "4", "--max-new-tokens", "12", "--jsonl", "the"])
    [o] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    if o["satisfied"]:
        t = o["text"]
        assert any(has(t[: m.start()], w) for w in ("cat", "dog") for m in re.finditer("mat", t))
    assert code == (0 if o["satisfied"] else 1)


def test_generate_jsonl_per_line_constraints_and_bad_lines(model_dir, tmp_path, capsys):  # noqa: F811
    from fstbeam.cli.main import main

    words = tmp_path / "words.txt"
    words.write_text("a\ncat\ndog\nthe\nmat\non\nsat\n", encoding="utf-8")
    lines = [
        {"prompt": "the cat", "phrases": [["dog", "mat"]]},
        "not json",
        {"prompt": "a dog", "phrases": ["sat", "mat"], "ordered": True},
        {"prompt": "x", "phrases": [[]]},
        {"prompt": "y", "phrases": ["zebra"]},
        {"prompt": "a", "avoid": ["cat"], "prefix": "the"},
        {"prompt": "z", "colour": "red"},
        {"prompt": "on", "phrases": ["the cat"], "sentence_case": True},
    ]
    f = tmp_path / "inputs.jsonl"
    f.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--words", str(words), "--file", str(f),
                 "--beam", "4", "--max-new-tokens", "10", "--jsonl"])
    cap = capsys.readouterr()
    records = [json.loads(line) for line in cap.out.splitlines()]
    assert [o["line"] for o in records] == list(range(1, 9))  # every line in file order, bad ones included
    bad = [o for o in records if o["index"] is None]  # a bad line's error record (issue 23)
    assert [o["line"] for o in bad] == [2, 4, 5, 7] and all(o["error"] and o["text"] == "" for o in bad)
    out = [o for o in records if o["index"] is not None]
    assert [o["line"] for o in out] == [1, 3, 6, 8]  # the good lines, decoded and written in order
    for n in (2, 4, 5, 7):
        assert f"{f}:{n}:" in cap.err, n  # each bad line named by its number
    assert "zebra" in cap.err and "not valid JSON" in cap.err and "colour" in cap.err
    assert code == 2
    by = {o["line"]: o for o in out}
    listed = {"a", "cat", "dog", "the", "mat", "on", "sat"}
    for o in out:  # every word of a satisfied output is listed (any case; the list allows numbers and punctuation)
        if o["satisfied"]:
            assert {w.lower() for w in re.findall(r"[^\W\d_]+", re.sub(r"'s\b", "", o["text"]))} <= listed, o["text"]
    if by[1]["satisfied"]:
        assert has(by[1]["text"], "dog") or has(by[1]["text"], "mat")
    if by[3]["satisfied"]:
        t = by[3]["text"]
        assert any(has(t[: m.start()], "sat") for m in re.finditer("mat", t))
    if by[6]["satisfied"]:
        assert by[6]["text"].lstrip().startswith("the") and not has(by[6]["text"], "cat")
    # each line decodes as the Python API decodes it alone with the doors' preset, all constraints compiled at once
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(model_dir), device="cpu")
    for n, kw in ((1, dict(phrases=[["dog", "mat"]])), (3, dict(phrases=["sat", "mat"], ordered=True)),
                  (6, dict(avoid=["cat"], prefix="the")), (8, dict(phrases=[Phrase("the cat", sentence_case=True)]))):
        cc = compile_constraints(tokenizer=dec.vocab, words=str(words), leading_space=True, **kw)
        [r] = dec.generate([lines[n - 1]["prompt"]], cc, beam_size=4, max_new_tokens=10, preset="auto")
        assert r.text == by[n]["text"] and r.satisfied == by[n]["satisfied"], n


# ---- seq2seq ---------------------------------------------------------------------------------
def test_per_input_terms_on_a_tiny_encoder_decoder():
    """A tiny T5: each source gets its own AnyOf term; the wide beam equals brute force."""
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.contract.vocab import Vocab
    from fstbeam.runtime.model.adapters import Seq2SeqAdapter

    toks = ["<pad>", "<eos>", "a", "b", " ", "ab", " a", " b", "c", " c", "ba"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i > 1}, eos_ids=[1], width=len(toks))
    model = tiny_t5(len(toks))
    ccs = [compile_constraints(tokenizer=v, phrases=[["ab", "c"]]), compile_constraints(tokenizer=v, phrases=[["b a", "ba"]])]
    srcs = [[2, 3, 4], [8, 9]]
    L = 2
    eng = SearchEngine(Seq2SeqAdapter(model), SearchConfig(beam_size=len(toks) ** L, max_new_tokens=L, batch_size=2),
                       eos_ids=[1], device="cpu")
    res = sorted(eng.run([Request(i, s, InputConstraints.from_compiled(c)) for i, (s, c) in enumerate(zip(srcs, ccs))]),
                 key=lambda r: r.index)
    for r, src, cc, alts in zip(res, srcs, ccs, (["ab", "c"], ["b a", "ba"])):
        def lp(seq, src=src):
            with torch.no_grad():
                out = model(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([[0] + list(seq)]))
            return torch.log_softmax(out.logits[0, -1].double(), -1)

        [(_, best, seq, eos)] = brute_force(lp, [], V=len(toks), L=L, eos=[1], matcher_factory=cc.matcher)
        h = r.hypotheses[0]
        assert h.tokens == seq and h.logprob == pytest.approx(best, abs=1e-4)
        text = b"".join(v.token_bytes[t] for t in seq).decode()
        assert any(has(text, a) for a in alts), text


@pytest.mark.parametrize("phrases, ordered, units", [
    ([["b a", "c"]], False, [(3, 1)]),  # AnyOf of two spellings: one unit, when met
    (["b a", "c"], True, [(1, 1), (3, 1), (4, 1)]),  # ordered one-spelling items: their words in turn
    ([Phrase("a b", sentence_case=True)], False, [(1, 1), (3, 1)]),  # "a b" / "A b": two words
])
def test_anyof_and_ordered_banks_count_items_and_words(setup, phrases, ordered, units):
    """DBA banks of AnyOf / ordered automata: each state's bank, from the automaton's byte
    progress, equals the unit rule written out by hand ((byte progress, units gained) when a
    unit is complete; a unit counts from the byte after the previous one: begun)."""
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.contract.progress import IS_WORD_BYTE
    from fstbeam.fst.text import IS_WORD_BYTE as FST_WORD_BYTE
    from fstbeam.runtime.search.dba import num_banks
    from fstbeam.runtime.search.tables import Tables

    assert (IS_WORD_BYTE == FST_WORD_BYTE).all()  # the contract's copy of the word bytes
    v = setup[0]
    cc = compile_constraints(tokenizer=v, phrases=phrases, ordered=ordered)
    [a] = cc.phrases
    inp = InputConstraints.from_compiled(cc)
    tb = Tables([inp], vocab_width=v.width, eos_ids=[0])
    start = tb.light_starts(inp)[0]
    assert num_banks(cc.phrases) == 1 + sum(g for _, g in units)
    for q in range(a.n_states):
        starts = [0] + [p for p, _ in units[:-1]]
        want = sum(g for start, (_, g) in zip(starts, units) if int(a.progress[q]) > start)
        assert int(tb.bank(torch.tensor([[start - a.start + q]]))[0]) == want, (q, int(a.progress[q]))
