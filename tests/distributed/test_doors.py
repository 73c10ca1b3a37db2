"""One request, every door (DESIGN.md wave 3): API keywords, ``compile-constraints`` flags,
``fstbeam generate`` flags, a JSONL line and a batch row give the same artifact (fingerprint), and
the same prompt gives the same text through ``generate``, ``batch``, the API and HTTP
(``fstbeam serve``, with the search settings left to their defaults on both sides)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from batch_helpers import SEARCH, WORDS, read_shards  # noqa: E402

import fstbeam  # noqa: E402
from fstbeam.cli import main  # noqa: E402
from fstbeam.cli.compile_constraints import main as compile_main  # noqa: E402

PHRASES = ["the cat", ["dog", "dogs"]]
AVOID = ["mat"]


@pytest.fixture(scope="module")
def setup(model_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("doors")
    words = d / "words.txt"
    words.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw")
    return d, words, dec


def _flags(words):
    return ["--words", str(words), "--phrase", "the cat", "--any-of", "dog|dogs", "--avoid", "mat"]


def test_every_door_compiles_the_same_artifact(setup, model_dir):
    from fstbeam.cli.generate import _constraints
    from fstbeam.cli.inputs import read_inputs
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.rows import parse_row
    from fstbeam.distributed.worker import DecodeWorker

    d, words, dec = setup
    api = fstbeam.compile_constraints(words=str(words), phrases=PHRASES, avoid=AVOID, tokenizer=dec.tokenizer,
                                      leading_space=True)
    # compile-constraints compile
    out = d / "cli.fstbeam"
    assert compile_main(["compile", *_flags(words), "--leading-space", "--tokenizer", str(model_dir), "-o", str(out),
                         "--no-progress"]) == 0
    via_compile_cli = fstbeam.load_constraints(out, tokenizer=dec.tokenizer)
    # fstbeam generate flags (a raw prompt continues text: a leading space is allowed)
    via_generate = _constraints(build_parser().parse_args(["generate", *_flags(words), "x"]), dec)
    # a JSONL line on top of the command's word list
    base = fstbeam.compile_constraints(words=str(words), tokenizer=dec.tokenizer, leading_space=True)
    line = d / "in.jsonl"
    line.write_text(json.dumps({"prompt": "x", "phrases": PHRASES, "avoid": AVOID}) + "\n", encoding="utf-8")
    via_jsonl = read_inputs(str(line), base, dec.vocab).constraints[0]
    # a batch row on top of the job's shared artifact
    base_path = d / "base.fstbeam"
    base.save(base_path)
    worker = DecodeWorker(model=str(model_dir), constraints=str(base_path), device="cpu", prompt_format="raw")
    via_row = worker.constraints_for(parse_row({"prompt": "x", "phrases": PHRASES, "avoid": AVOID}))
    fps = {name: cc.fingerprint for name, cc in [("api", api), ("compile-constraints", via_compile_cli),
                                                  ("generate", via_generate), ("jsonl", via_jsonl), ("row", via_row)]}
    assert len(set(fps.values())) == 1, fps
    # and it is a real constraint: without the avoid phrase the fingerprint differs
    other = fstbeam.compile_constraints(words=str(words), phrases=PHRASES, tokenizer=dec.tokenizer, leading_space=True)
    assert other.fingerprint != api.fingerprint


#: per-input requests on a base with the phrase "the cat" (defaults left unset): an ordered list
#: that repeats a base phrase (kept whole: its order is the constraint), and an AnyOf, a repeated
#: phrase (kept once), an avoid phrase and a prefix
EXTENSIONS = [{"phrases": ["dog", "the cat"], "ordered": True, "avoid": ["mat"]},
              {"phrases": [["dog", "dogs"], "the cat"], "avoid": ["ran"], "prefix": "the"}]


@pytest.mark.parametrize("ext", EXTENSIONS, ids=["ordered", "anyof-prefix"])
def test_one_merge_rule_at_every_door(ext, setup, model_dir):
    """The same base and the same per-input request give one fingerprint through every door
    that extends a base: the API (with_request), a JSONL line of ``fstbeam generate`` on its
    flags, a batch row on the job's artifact (from ``compile-constraints``) and an HTTP body on a
    stored artifact -- all by `ConstraintRequest.added_to`. The merged automata accept exactly what
    the base and the request alone both accept (checked on sampled texts)."""
    from fstbeam.cli.generate import _constraints
    from fstbeam.cli.inputs import read_inputs
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.rows import parse_row
    from fstbeam.distributed.worker import DecodeWorker
    from fstbeam.serve.artifacts import ArtifactStore
    from fstbeam.serve.config import Limits
    from fstbeam.serve.constraints import compile_request as http_compile

    d, words, dec = setup
    flags = ["--words", str(words), "--phrase", "the cat"]
    api_base = fstbeam.compile_constraints(words=str(words), phrases=["the cat"], tokenizer=dec, leading_space="auto")
    base_path = d / "merge-base.fstbeam"
    assert compile_main(["compile", *flags, "--leading-space", "--tokenizer", str(model_dir), "-o", str(base_path),
                         "--no-progress"]) == 0
    flag_base = _constraints(build_parser().parse_args(["generate", *flags, "x"]), dec)
    file_base = fstbeam.load_constraints(base_path, tokenizer=dec.tokenizer)
    assert api_base.fingerprint == flag_base.fingerprint == file_base.fingerprint

    kw = {k: v for k, v in ext.items()}
    via_api = fstbeam.with_request(api_base, **kw)
    line = d / "merge.jsonl"
    line.write_text(json.dumps({"prompt": "x", **ext}) + "\n", encoding="utf-8")
    via_jsonl = read_inputs(str(line), flag_base, dec.vocab, dec.continues_text).constraints[0]
    worker = DecodeWorker(model=str(model_dir), constraints=str(base_path), device="cpu", prompt_format="raw")
    via_row = worker.constraints_for(parse_row({"prompt": "x", **ext}))
    store = ArtifactStore(dec.vocab, continues_text=dec.continues_text, limits=Limits())
    store.add("base", file_base)
    via_http = http_compile({"artifact": "base", **ext}, store)
    fps = {"api": via_api.fingerprint, "jsonl": via_jsonl.fingerprint, "row": via_row.fingerprint,
           "http": via_http.fingerprint}
    assert len(set(fps.values())) == 1, fps
    assert via_api.fingerprint != api_base.fingerprint

    # what it means: the base's constraints and the request's, both (texts of the word list)
    alone = fstbeam.compile_constraints(words=str(words), tokenizer=dec, leading_space="auto", **kw)
    import random

    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(400)]
    texts += ["the dog and the cat", "dog the cat", "the cat and dog", "the dogs sat on the cat"]

    def ok(cc, text):
        m = cc.matcher()
        try:
            for t in dec.tokenizer(text, add_special_tokens=False)["input_ids"]:
                m.advance(t)
        except fstbeam.errors.DisallowedTokenError:
            return False
        return m.is_final()

    for t in texts:
        assert ok(via_api, t) == (ok(api_base, t) and ok(alone, t)), t
    assert any(ok(via_api, t) for t in texts)


def test_a_phrase_given_twice_is_one_constraint(setup, model_dir, capsys):
    """--phrase cat with a JSONL line {"phrases": ["dog", "cat"]}: cat and dog, once each."""
    d, words, dec = setup
    line = d / "dup.jsonl"
    line.write_text(json.dumps({"prompt": "the", "phrases": ["dog", "cat"]}) + "\n", encoding="utf-8")
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--words", str(words),
                 "--phrase", "cat", "--file", str(line), "--jsonl", "--max-new-tokens", "8", "--beam", "2"]) in (0, 1)
    [out] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert out["phrases"] == ["cat", "dog"] and len(out["phrases_met"]) == 2
    base = fstbeam.with_request(fstbeam.compile_constraints(words=str(words), tokenizer=dec.tokenizer), phrases=["cat"])
    twice = fstbeam.with_request(base, phrases=["dog", "cat", "dog"])
    assert [p.text for p in twice.phrases] == ["cat", "dog"]


def test_generate_batch_and_api_give_the_same_text(setup, model_dir, words_artifact, tmp_path, capsys):
    d, words, dec = setup
    prompts = ["the cat", "a dog", "on a"]
    rows = [{"prompt": p, "phrases": ["mat"]} for p in prompts]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    search = ["--beam", str(SEARCH["beam_size"]), "--max-new-tokens", str(SEARCH["max_new_tokens"])]
    common = ["--model", str(model_dir), "--device", "cpu", "--format", "raw", *search]
    # fstbeam generate with a JSONL file of the same rows
    assert main(["generate", *common, "--constraints", str(words_artifact), "--file", str(tmp_path / "in.jsonl"),
                 "--jsonl"]) in (0, 1)
    gen = [json.loads(x)["text"] for x in capsys.readouterr().out.splitlines()]
    # fstbeam batch
    assert main(["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"), "--constraints",
                 str(words_artifact), "-q", *common]) in (0, 1)
    bat = [r["text"] for r in read_shards(tmp_path / "out")]
    # the API with the format's preset
    base = fstbeam.load_constraints(words_artifact, tokenizer=dec.tokenizer)
    cons = [fstbeam.with_request(base, phrases=r["phrases"]) for r in rows]
    api = [r.text for r in dec.generate(prompts, cons, preset="auto", **SEARCH)]
    assert gen == bat == api
    assert any("mat" in t for t in api)


@pytest.mark.parametrize("fmt", ["raw", "qa"])
def test_http_with_nothing_set_gives_generates_text(fmt, words_artifact, tmp_path, capsys):
    """A request that sets no search field decodes like ``fstbeam generate`` given no search flag:
    the same preset for the same --format, the same SearchConfig defaults (64 new tokens: a model
    with room for them, and the same tokenizer as the artifact's)."""
    import os
    import sys
    import urllib.error
    import urllib.request

    from tiny_model import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "model", max_positions=128)

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "serve"))
    from serve_helpers import Server

    # the last ends with a cue line: stop_at="auto" ends its answer at the line at both doors
    prompts = ["the cat", "a dog", "the dog sat on a mat.\nthe cat:"]
    rows = [{"prompt": p, "phrases": ["mat"]} for p in prompts]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--format", fmt, "--constraints",
                 str(words_artifact), "--file", str(tmp_path / "in.jsonl"), "--jsonl"]) in (0, 1)
    gen = [json.loads(x)["text"] for x in capsys.readouterr().out.splitlines()]
    server = Server(["--model", model_dir, "--device", "cpu", "--format", fmt, "--constraints",
                     f"words={words_artifact}"])
    try:
        http = []
        for p in prompts:
            body = json.dumps({"prompt": p, "constraints": {"artifact": "words", "phrases": ["mat"]}}).encode()
            req = urllib.request.Request(server.url + "/v1/completions", body, {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=300) as r:
                    http.append(json.loads(r.read())["choices"][0]["text"])
            except urllib.error.HTTPError as exc:
                raise AssertionError(exc.read().decode()) from None
    finally:
        assert server.stop() == 0
    assert http == gen


def test_generate_batch_and_serve_have_the_same_search_flags():
    """One definition (SearchConfig's fields): the same flags, defaults and help in every command
    (``serve``'s set the defaults of its requests)."""
    from fstbeam.cli.main import build_parser
    from fstbeam.runtime.config import SearchConfig

    sub = next(a for a in build_parser()._actions if a.dest == "command")

    def search_flags(cmd):
        [group] = [g for g in sub.choices[cmd]._action_groups if g.title.startswith("search")]
        return {tuple(a.option_strings): (a.default, a.help, a.choices) for a in group._group_actions}

    gen, bat, srv = search_flags("generate"), search_flags("batch"), search_flags("serve")
    assert gen == bat == srv
    flags = {s for opts in gen for s in opts}
    assert {"--beam", "--nbest", "--length-ratio", "--length-reward", "--max-new-tokens", "--stop-at", "--preset"} <= flags
    # every flag's default is "not given" (the preset's or SearchConfig's value applies)
    assert all(default is None for default, _, _ in gen.values())
    assert f"(default: {SearchConfig().beam_size})" in gen[("--beam",)][1]


@pytest.mark.parametrize("fmt", ["raw", "chat"])
def test_a_request_that_leaves_leading_space_unset_is_one_automaton_at_every_door(fmt, model_dir, tmp_path):
    """One default for every door (issue 38): a request with its own word list and no
    ``leading_space`` compiles to the same automaton through a JSONL line, a batch row, the
    server's compile and the API with ``leading_space="auto"``: the prompt format decides."""
    from batch_helpers import WORDS

    from fstbeam.cli.inputs import read_inputs
    from fstbeam.distributed.rows import parse_row
    from fstbeam.distributed.worker import DecodeWorker
    from fstbeam.serve.artifacts import ArtifactStore
    from fstbeam.serve.config import Limits
    from fstbeam.serve.constraints import compile_request as http_compile

    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format=fmt)
    request = {"words": WORDS, "phrases": ["the cat"]}
    line = tmp_path / "in.jsonl"
    line.write_text(json.dumps({"prompt": "x", **request}) + "\n", encoding="utf-8")
    via_jsonl = read_inputs(str(line), None, dec.vocab, dec.continues_text).constraints[0]
    worker = DecodeWorker(model=str(model_dir), device="cpu", prompt_format=fmt)
    via_row = worker.constraints_for(parse_row({"prompt": "x", **request}))
    store = ArtifactStore(dec.vocab, continues_text=dec.continues_text, limits=Limits())
    via_http = http_compile(dict(request), store)
    api = fstbeam.compile_constraints(words=WORDS, phrases=["the cat"], tokenizer=dec, leading_space="auto")
    fps = {"jsonl": via_jsonl.fingerprint, "row": via_row.fingerprint, "http": via_http.fingerprint,
           "api": api.fingerprint}
    assert len(set(fps.values())) == 1, fps
    # and the format matters: raw continues text (a space may come first), chat does not
    spaced = fstbeam.compile_constraints(words=WORDS, phrases=["the cat"], tokenizer=dec, leading_space=True)
    assert (api.fingerprint == spaced.fingerprint) == dec.continues_text


def test_a_structured_request_with_its_json_options_is_one_automaton_at_every_door(setup, model_dir):
    """A JSON Schema with every ``json_*`` option (``json_strict`` among them) through the API,
    ``compile-constraints``, ``fstbeam generate``'s flags, a JSONL line, a batch row and an HTTP
    body: one fingerprint, and ``json_strict`` is part of it (the options over HTTP were a 500)."""
    from fstbeam.cli.generate import _constraints
    from fstbeam.cli.inputs import read_inputs
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.rows import parse_row
    from fstbeam.distributed.worker import DecodeWorker
    from fstbeam.serve.artifacts import ArtifactStore
    from fstbeam.serve.config import Limits
    from fstbeam.serve.constraints import compile_request as http_compile

    d, _, dec = setup
    schema = {"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "tags": {"type": "array"}},
              "required": ["pet"]}
    req = {"json_schema": schema, "json_strict": True, "json_max_depth": 2, "json_whitespace": "compact"}
    flags = ["--json-schema", json.dumps(schema), "--json-strict", "--json-max-depth", "2", "--json-whitespace", "compact"]
    api = fstbeam.compile_constraints(tokenizer=dec, leading_space="auto", **req)
    out = d / "structured.fstbeam"
    assert compile_main(["compile", *flags, "--leading-space", "--tokenizer", str(model_dir), "-o", str(out),
                         "--no-progress"]) == 0
    via_compile_cli = fstbeam.load_constraints(out, tokenizer=dec.tokenizer)
    via_generate = _constraints(build_parser().parse_args(["generate", *flags, "x"]), dec)
    line = d / "structured.jsonl"
    line.write_text(json.dumps({"prompt": "x", **req}) + "\n", encoding="utf-8")
    via_jsonl = read_inputs(str(line), None, dec.vocab, dec.continues_text).constraints[0]
    worker = DecodeWorker(model=str(model_dir), device="cpu", prompt_format="raw")
    via_row = worker.constraints_for(parse_row({"prompt": "x", **req}))
    via_http = http_compile(req, ArtifactStore(dec.vocab, continues_text=dec.continues_text, limits=Limits()))
    fps = {name: cc.fingerprint for name, cc in [("api", api), ("compile-constraints", via_compile_cli),
                                                  ("generate", via_generate), ("jsonl", via_jsonl), ("row", via_row),
                                                  ("http", via_http)]}
    assert len(set(fps.values())) == 1, fps
    spec = fstbeam.compile_constraints(tokenizer=dec, leading_space="auto", **{**req, "json_strict": None})
    assert spec.fingerprint != api.fingerprint
