"""bench_structured's engines: one adapter per engine, the same four operations for each, and the
walk that checks an instance's tokens against an engine's masks.

An adapter compiles a schema to a handle, starts a matcher on it, fills a preallocated int32 bitmask
row (bit t of word t >> 5: token t allowed) for the matcher's state, advances it by one token and
says whether the text so far is a complete document. Every engine is run single-threaded (the
worker sets the thread variables before any import; each engine's own thread option below) and
gets the same tokenizer: the default Gemma 3 270M tokenizer (262,144 ids).
"""
from __future__ import annotations

import functools
import json
import time
from typing import Any, Callable, Sequence

import numpy as np

WIDTH = 262144


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def token_allowed(row: Any, token: int) -> bool:
    return bool((int(row[token >> 5]) >> (token & 31)) & 1)


def walk(adapter: Any, handle: Any, ids: Sequence[int], clock: Callable[[], float] = time.perf_counter) -> tuple[bool, int, list[float]]:
    """Walk ``ids`` through the engine: before each token fill the mask (timed) and stop at the
    first token it does not allow. Returns (accepted: every token allowed and the end accepting,
    tokens walked, fill times in seconds)."""
    m = adapter.start(handle)
    times = []
    for i, t in enumerate(ids):
        t0 = clock()
        row = adapter.fill(m)
        times.append(clock() - t0)
        if not token_allowed(row, t):
            return False, i, times
        m = adapter.advance(m, t)
        if m is None:  # the mask allowed a token the matcher then refused: counted as a rejection
            return False, i, times
    return bool(adapter.accepting(m)), len(ids), times


def _direct() -> bool:
    import inspect

    import fstbeam

    return "json_schema" in inspect.signature(fstbeam.compile_constraints).parameters


def fstbeam_compile(schema: Any, vocab: Any) -> Any:
    """The user's call, ``compile_constraints(json_schema=schema)``; until that door exists, the
    same pipeline through ``grammar=`` with the schema's character automaton."""
    import fstbeam

    if _direct():
        return fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab)
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

    return fstbeam.compile_constraints(grammar=json_schema_fst(schema), tokenizer=vocab)


@functools.cache
def _fill_state_row() -> Callable[..., np.ndarray]:
    from fstbeam.kernels.cpu_bits import fill_state_row

    return fill_state_row


class Fstbeam:
    """``fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab)``; the mask is the state's
    table row (a dense bit row copied, its sparse extra tokens OR-ed in, in one compiled pass:
    `fstbeam.kernels.cpu_bits.fill_state_row`), what the decoder reads."""

    name = "fstbeam"

    def setup(self) -> str:
        import fstbeam

        self.fstbeam = fstbeam
        self.vocab = fstbeam.load_vocab("default")
        self.buf = np.zeros(WIDTH // 32, np.int32)
        warm = fstbeam.compile_constraints(words=["warm"], tokenizer=self.vocab)  # the per-tokenizer index, built once
        self.fill(self.start(warm))  # and the mask kernel compiled (numba): no schema's cost
        return f"fstbeam {fstbeam.__version__} ({'compile_constraints(json_schema=...)' if _direct() else 'grammar=json_schema_fst(schema)'})"

    def compile(self, schema: Any) -> Any:
        return fstbeam_compile(schema, self.vocab)

    def start(self, cc: Any) -> Any:
        return (cc.hard, cc.hard.start)

    def fill(self, m: Any) -> np.ndarray:
        h, s = m
        return _fill_state_row()(h, s, self.buf)

    def advance(self, m: Any, token: int) -> Any:
        h, s = m
        n = h.next_state(s, token)
        return None if n < 0 else (h, n)

    def accepting(self, m: Any) -> bool:
        h, s = m
        return bool(h.final[s])


class FstbeamStrict(Fstbeam):
    """``compile_constraints(json_schema=schema, json_strict=True)``: objects and tuples take only
    what their schema declares (docs/structured.md), the rule of XGrammar's default strict_mode:
    the row to set beside it for compile time (valid instances with undeclared members are
    rejected, as XGrammar rejects them)."""

    name = "fstbeam-strict"

    def setup(self) -> str:
        return super().setup().replace("json_schema=...)", "json_schema=..., json_strict=True)")

    def compile(self, schema: Any) -> Any:
        return self.fstbeam.compile_constraints(json_schema=schema, tokenizer=self.vocab, json_strict=True)


class Llguidance:
    """``LLMatcher(tokenizer, grammar_from_json_schema(schema, ...))``, compact separators, no free
    whitespace (the serialization's language); ``lenient``: its options that accept more schemas."""

    name = "llguidance"
    lenient = False

    def setup(self) -> str:
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        from fstbeam.files.default_model import load_default_tokenizer

        self.ll = llguidance
        self.lnp = llguidance.numpy
        self.tok = llguidance.hf.from_tokenizer(load_default_tokenizer(), n_vocab=WIDTH)
        self.buf = self.lnp.allocate_token_bitmask(1, WIDTH)
        return f"{self.name} {_version('llguidance')}"

    def compile(self, schema: Any) -> Any:
        opts: dict[str, Any] = {"item_separator": ",", "key_separator": ":", "whitespace_flexible": False}
        if self.lenient:
            opts.update(lenient=True, coerce_one_of=True)
        grammar = self.ll.LLMatcher.grammar_from_json_schema(schema, overrides=opts)
        m = self.ll.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return m

    def start(self, m: Any) -> Any:
        m.reset()
        return m

    def fill(self, m: Any) -> np.ndarray:
        self.lnp.fill_next_token_bitmask(m, self.buf, 0)
        return self.buf[0]

    def advance(self, m: Any, token: int) -> Any:
        return m if m.consume_token(token) and not m.is_error() else None

    def accepting(self, m: Any) -> bool:
        return bool(m.is_accepting())


class LlguidanceLenient(Llguidance):
    name = "llguidance-lenient"
    lenient = True


class Xgrammar:
    """``GrammarCompiler(max_threads=1, cache off).compile_json_schema(schema, any_whitespace=False,
    separators=(",", ":"))`` with its default strict_mode=True (undeclared properties refused);
    ``xgrammar-nonstrict``: strict_mode=False, as the specification reads, but its compile takes
    about 100x longer (a Github_easy schema: 28 s of CPU against 0.24 s)."""

    name = "xgrammar"
    strict = True

    def setup(self) -> str:
        import xgrammar as xgr

        from fstbeam.files.default_model import load_default_tokenizer

        self.xgr = xgr
        self.info = xgr.TokenizerInfo.from_huggingface(load_default_tokenizer(), vocab_size=WIDTH)
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.buf = xgr.allocate_token_bitmask(1, WIDTH)
        self.stop = list(self.info.stop_token_ids)
        return f"{self.name} {_version('xgrammar')}"

    def compile(self, schema: Any) -> Any:
        g = self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=(",", ":"), strict_mode=self.strict)
        return self.xgr.GrammarMatcher(g)

    def start(self, m: Any) -> Any:
        m.reset()
        return m

    def fill(self, m: Any) -> Any:
        m.fill_next_token_bitmask(self.buf, 0)
        return self.buf[0].numpy()

    def advance(self, m: Any, token: int) -> Any:
        return m if m.accept_token(token) else None

    def accepting(self, m: Any) -> bool:
        row = self.fill(m)
        return any(token_allowed(row, t) for t in self.stop)


class XgrammarNonstrict(Xgrammar):
    name = "xgrammar-nonstrict"
    strict = False


class OutlinesCore:
    """``Index(build_regex_from_schema(schema, whitespace_pattern=""), vocabulary)`` with a ``Guide``;
    the vocabulary is the default tokenizer's token bytes (fstbeam's reading of it), EOS id 1."""

    name = "outlines-core"

    def setup(self) -> str:
        import outlines_core as oc

        import fstbeam

        self.oc = oc
        vocab = fstbeam.load_vocab("default")
        by_bytes: dict[bytes, list[int]] = {}
        for i, b in enumerate(vocab.token_bytes):
            if b and i not in vocab.eos_ids:
                by_bytes.setdefault(b, []).append(i)
        self.vocabulary = oc.Vocabulary(vocab.eos_ids[0], by_bytes)
        self.buf = np.zeros(WIDTH // 32, np.int32)
        return f"outlines-core {_version('outlines-core')}"

    def compile(self, schema: Any) -> Any:
        regex = self.oc.json_schema.build_regex_from_schema(json.dumps(schema), "")
        return self.oc.Index(regex, self.vocabulary)

    def start(self, index: Any) -> Any:
        return self.oc.Guide(index)

    def fill(self, g: Any) -> np.ndarray:
        g.write_mask_into(self.buf.ctypes.data, self.buf.size, 4)
        return self.buf

    def advance(self, g: Any, token: int) -> Any:
        try:
            g.advance(token)
        except ValueError:
            return None
        return g

    def accepting(self, g: Any) -> bool:
        return bool(g.is_finished())


ENGINES = {e.name: e for e in (Fstbeam, FstbeamStrict, Llguidance, LlguidanceLenient, Xgrammar, XgrammarNonstrict, OutlinesCore)}
