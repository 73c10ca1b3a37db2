"""Structured constraints under tokenizers of the two other families fstbeam reads: GPT-2-style
byte-level BPE and Llama-2-style SentencePiece BPE with byte fallback (`<0x0A>` tokens), each
trained here on JSON text, so that their tokens span JSON syntax (`":"`, `"},{"`, `▁{"`) the
way real tokenizers' do. The Gemma tokenizer is checked elsewhere (test_regex_masks).

The oracle is the character automaton alone, independent of the lift and the tables: a token is
allowed exactly when its bytes take the DFA to a state from which a final state can be reached
(with a prefix, the product of the DFA and the prefix), and the output may end exactly where the
DFA is final. Each text is walked along a random tokenization (any tokenization must be
accepted), and the mask compared with the oracle's at every step.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.choice import choice_fst
from fstbeam.compiler.structured.json_schema.location import order_instance
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.contract.compiled import Matcher

tokenizers = pytest.importorskip("tokenizers")
sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import dev_sample, random_walk  # noqa: E402

SCHEMAS = ["Github_easy---o27352", "Github_easy---o47167", "Github_hard---o5389", "Github_medium---o83292",
           "Github_trivial---o58865", "Glaiveai2K---generate_invoice_29668776", "JsonSchemaStore---first-timers",
           "Kubernetes---kb_52_Normalized", "Snowplow---sp_272_Normalized", "WashingtonPost---wp_41_Normalized",
           "Synthesized---draft2019_09_nonvalid_oneOf_id5_subschema1_not_2"]
REGEXES = [r"^[A-Z]{2}-\d{3,5}$", r"^(https?://)?[a-z0-9.-]+\.[a-z]{2,}(/[^\s]*)?$", r"^\p{L}+( \p{L}+)*$",
           r"^[\u00c0-\u024f a-z]{1,12}$", r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$", r"^(yes|no|ja|nein|\"quoted\")$"]
CHOICES = ["Grüße", "ça va?", "👋 hi", "{\"a\": 1}", "line\nbreak"]


def _load(name: str) -> dict:
    path = dev_sample() / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"the development sample is not at {path.parent}")
    return json.loads(path.read_text(encoding="utf-8"))


def _text(schema, value) -> bytes:
    return json.dumps(order_instance(schema, value), separators=(",", ":"), ensure_ascii=False).encode()


def _corpus() -> list[str]:
    out = ["The quick brown fox. Grüße aus Köln, ça va? 👋 東京 line\nbreak"]
    for name in SCHEMAS:
        for t in _load(name)["tests"]:
            out += [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False), json.dumps(t["data"], ensure_ascii=False)]
    return out * 3


def _byte_level(folder: Path, corpus: list[str]) -> Path:
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=1500, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False)
    folder.mkdir(parents=True)
    bpe._tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}), encoding="utf-8")
    return folder


def _sentencepiece(folder: Path, corpus: list[str]) -> Path:
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")  # (training only)
    special = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tok.train_from_iterator(corpus, trainer=trainers.BpeTrainer(vocab_size=1500, min_frequency=2, special_tokens=special,
                                                                limit_alphabet=120, show_progress=False))
    tok.pre_tokenizer = None  # as Llama 2's file: the normalizer alone
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["added_tokens"] = [a for a in data["added_tokens"] if not a["content"].startswith("<0x")]  # plain pieces, as Llama's
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>", "bos_token": "<s>"}), encoding="utf-8")
    return folder


@pytest.fixture(scope="module", params=["byte-level", "sentencepiece"])
def vocab(request, tmp_path_factory):
    build = _byte_level if request.param == "byte-level" else _sentencepiece
    v = fstbeam.load_vocab(str(build(tmp_path_factory.mktemp("tok") / request.param, _corpus())))
    assert v.kind == request.param
    lengths = [len(b) for b in v.token_bytes if b]
    assert max(lengths) >= 6 and len(lengths) > 1000, "the trained tokenizer should have long merged tokens"
    return v


class Oracle:
    """Masks from the character DFA alone (see the module's docstring)."""

    def __init__(self, vocab, fst, prefix: bytes = b""):
        dfa = fst_to_dfa(fst)
        n = len(dfa.final)
        self.nxt = np.vstack([dfa.next, np.full((1, 256), -1, np.int32)]).astype(np.int64)
        self.nxt[self.nxt < 0] = n  # one dead state
        live = np.append(dfa.final, False)
        while True:  # co-accessible states: a final state is reachable
            grown = live | live[self.nxt].any(axis=1)
            if (grown == live).all():
                break
            live = grown
        self.live, self.final, self.start, self.prefix, self.vocab = live, np.append(dfa.final, False), dfa.start, prefix, vocab
        self.lengths = np.array([len(b or b"") for b in vocab.token_bytes])
        self.spelled = np.zeros((vocab.width, self.lengths.max()), np.int64)  # each token's bytes, padded
        for i, tb in enumerate(vocab.token_bytes):
            self.spelled[i, :len(tb or b"")] = list(tb or b"")

    def state(self, data: bytes, q: int | None = None, k: int = 0) -> tuple[int, int]:
        """(DFA state, prefix bytes matched) after ``data``, from ``(q, k)`` (the start)."""
        q = self.start if q is None else q
        for b in data:
            if k < len(self.prefix):
                if b != self.prefix[k]:
                    return len(self.final) - 1, k
                k += 1
            q = int(self.nxt[q, b])
        return q, k

    def allowed(self, sofar: bytes) -> np.ndarray:
        here = self.state(sofar)
        if here[1] == len(self.prefix):  # (past the prefix: every token at once, a byte column at a time)
            q = np.full(self.vocab.width, here[0], np.int64)
            for j in range(self.spelled.shape[1]):
                more = self.lengths > j
                q[more] = self.nxt[q[more], self.spelled[more, j]]
            return self.live[q] & (self.lengths > 0)
        out = np.zeros(self.vocab.width, bool)
        for i, tb in enumerate(self.vocab.token_bytes):
            if tb:
                q, k = self.state(tb, *here)
                out[i] = bool(self.live[self.state(self.prefix[k:], q, k)[0]])
        return out

    def may_end(self, sofar: bytes) -> bool:
        q, k = self.state(sofar)
        return k == len(self.prefix) and bool(self.final[q])


def _tokenization(vocab, data: bytes, rng: random.Random) -> list[int]:
    """A random spelling of ``data`` in the vocabulary's tokens (half the time the longest)."""
    ids_of = {}
    for i, tb in enumerate(vocab.token_bytes):
        if tb:
            ids_of.setdefault(tb, i)
    longest = max(len(b) for b in ids_of)
    out, pos = [], 0
    while pos < len(data):
        fits = [ids_of[data[pos:pos + k]] for k in range(1, min(longest, len(data) - pos) + 1) if data[pos:pos + k] in ids_of]
        assert fits, (data, pos)  # (byte-level and byte-fallback vocabularies spell every byte)
        i = rng.choice(fits) if rng.random() < 0.5 else fits[-1]
        out.append(i)
        pos += len(vocab.token_bytes[i])
    return out


def _walk(cc, oracle: Oracle, vocab, data: bytes, rng: random.Random) -> int:
    """Walk ``data`` through ``cc``'s masks, comparing each with the oracle's; the steps taken."""
    m, sofar, ids = Matcher(cc), b"", _tokenization(vocab, data, rng)
    for step in range(len(ids) + 1):
        ours = np.zeros(vocab.width, bool)
        ours[m._text_allowed()] = True
        want = oracle.allowed(sofar)
        wrong = np.nonzero(ours != want)[0]
        assert not len(wrong), (data, step, [(vocab.token_bytes[i], bool(ours[i])) for i in wrong[:6]])
        assert m.is_final() == oracle.may_end(sofar), (data, step)
        if step == len(ids) or not ours[ids[step]]:
            return step
        m.advance(ids[step])
        sofar += vocab.token_bytes[ids[step]]
    return len(ids)


def test_json_schema_masks_equal_the_character_automaton(vocab):
    rng = random.Random(7)
    walked = ended = 0
    for name in SCHEMAS:
        d = _load(name)
        schema = d["schema"]
        for whitespace in ("compact", "flexible") if name.endswith(("o27352", "first-timers")) else ("compact",):
            cc = fstbeam.compile_constraints(json_schema=schema, json_whitespace=whitespace, tokenizer=vocab)
            oracle = Oracle(vocab, json_schema_fst(schema, whitespace=whitespace))
            for t in d["tests"]:
                data = _text(schema, t["data"])
                steps = _walk(cc, oracle, vocab, data, rng)
                walked += steps
                ended += t["valid"] and oracle.may_end(data)
    assert walked > 400 and ended >= len(SCHEMAS)


def test_a_prefix_ending_inside_a_token_under_a_json_schema(vocab):
    """The prefix is a light constraint on top of the schema's tables; the oracle is their
    product, from the character automaton and the prefix's bytes alone."""
    rng = random.Random(11)
    for name in SCHEMAS[:6]:
        d = _load(name)
        data = next(_text(d["schema"], t["data"]) for t in d["tests"] if t["valid"])
        cut = rng.randint(2, min(len(data) - 1, 30))
        while cut > 1 and (data[cut] & 0xC0) == 0x80:  # (a prefix is text: whole characters)
            cut -= 1
        prefix = data[:cut]
        cc = fstbeam.compile_constraints(json_schema=d["schema"], prefix=prefix.decode(), tokenizer=vocab)
        oracle = Oracle(vocab, json_schema_fst(d["schema"]), prefix=prefix)
        assert _walk(cc, oracle, vocab, data, rng) > 0 and oracle.may_end(data)


def test_regex_and_choice_masks_equal_the_character_automaton(vocab):
    rng = random.Random(3)
    cases = [(dict(regex=p), regex_fst(p)) for p in REGEXES]
    cases.append((dict(choice=CHOICES), None))
    for kwargs, fst in cases:
        cc = fstbeam.compile_constraints(tokenizer=vocab, **kwargs)
        fst = choice_fst(CHOICES) if fst is None else fst
        oracle = Oracle(vocab, fst)
        texts = [c.encode() for c in CHOICES] if "choice" in kwargs else []
        while len(texts) < 4:
            s = random_walk(fst_to_dfa(fst), rng, max_len=30)
            if s is not None:
                texts.append(s)
        for data in texts:
            _walk(cc, oracle, vocab, data, rng)
            assert oracle.may_end(data)
