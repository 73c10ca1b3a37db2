"""One model replica: loads the decoder and the shared constraints once, then decodes rows.

The same class runs inside a Ray actor and in-process, so both paths give the same rows. Rows
stream through ``Decoder.stream`` so its batch stays full while short outputs finish early.
"""
from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from typing import Any, Sequence

import fstbeam

from ..compiler.compiler import compiler_for
from ..errors import Error, TokenizerMismatchError
from .rows import RowRequest, error_row, parse_row, result_row

__all__ = ["DecodeWorker"]

_CACHE_SIZE = 1024  # per-row constraint sets kept (rows of a corpus often share their phrases)


class DecodeWorker:
    """Decode batches of input rows with one model.

    ``constraints``: ``None``, an artifact path (loaded here; its tokenizer fingerprint is
    checked against the model's) or a ``CompiledConstraints``. ``preset``: the search preset
    (default: the prompt format's, as ``fstbeam generate`` does); other keywords are `SearchConfig`
    settings that override it (``beam_size``, ``max_new_tokens``, ...); ``stop_at_newline`` is
    ``stop_at="line"``. ``packed_weights``: as for :class:`fstbeam.Decoder`.
    """

    def __init__(self, *, model=None, tokenizer=None, constraints=None, device="auto", prompt_format="auto",
                 stop_at_newline: bool = False, packed_weights: str = "auto", preset: str | None = None,
                 **search_options):
        from ..runtime.presets import search_config

        self.decoder = fstbeam.Decoder(model, tokenizer, device=device, prompt_format=prompt_format,
                                       packed_weights=packed_weights)
        self.shared = self._load(constraints)
        options = dict(search_options)
        if stop_at_newline:
            options["stop_at"] = "line"
        # the same preset rule as `fstbeam generate` (the preset of the prompt format)
        self.config = search_config(preset or self.decoder.preset, options)
        self._plain = None
        self._cache: OrderedDict[str, Any] = OrderedDict()

    def _load(self, constraints):
        if constraints is None:
            return None
        if hasattr(constraints, "vocab"):
            mine, theirs = self.decoder.vocab, constraints.vocab
            if mine.fingerprint != theirs.fingerprint and mine.token_bytes != theirs.token_bytes:
                raise TokenizerMismatchError(f"the constraints were compiled for another tokenizer ({theirs.describe()}) "
                                             f"than the model's ({mine.describe()}): recompile them for this model")
            return constraints
        if isinstance(constraints, (str, os.PathLike)):
            dec = self.decoder
            return fstbeam.load_constraints(constraints, tokenizer=dec.tokenizer if dec.tokenizer is not None else dec.vocab)
        raise TypeError(f"constraints must be None, an artifact path or CompiledConstraints, not {type(constraints).__name__}")

    # ---- per-row constraints ----------------------------------------------------------------
    def _base(self):
        if self.shared is not None:
            return self.shared
        if self._plain is None:  # no shared constraints: per-row phrases over any text
            self._plain = fstbeam.compile_constraints(tokenizer=self.decoder.vocab)
        return self._plain

    def constraints_for(self, req: RowRequest):
        """The row's constraint set: the shared one joined with the row's request (the merge rule
        of `ConstraintRequest`: its phrases, avoid and prefix added, each once)."""
        if not req.has_request:
            return self.shared
        key = req.key
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        request = req.request.for_prompt_format(self.decoder.continues_text)  # leading_space "auto"
        base = self._base()  # a row's own word list is compiled alone where the job has no shared set
        cc = compiler_for(base.vocab).compile_request(request, base=base)
        self._cache[key] = cc
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return cc

    # ---- decoding -----------------------------------------------------------------------------
    def decode_rows(self, rows: Sequence[dict], first_index: int | None = None) -> list[dict]:
        """One output row per input row, in order. ``first_index`` numbers rows without an ``id``."""
        reqs = [parse_row(r, None if first_index is None else first_index + i) for i, r in enumerate(rows)]
        out: list[dict | None] = [None] * len(reqs)
        todo, cons = [], []
        for i, req in enumerate(reqs):
            if req.error is not None:
                out[i] = error_row(req, req.error)
                continue
            try:
                cons.append(self.constraints_for(req))
            except (Error, ValueError) as exc:
                out[i] = error_row(req, str(exc))
                continue
            todo.append(i)
        if todo:
            try:
                done = self._decode([reqs[i] for i in todo], cons)
            except Exception:  # noqa: BLE001 - isolate the row that broke the batch, one at a time
                done = [self._decode_one(reqs[i], c) for i, c in zip(todo, cons)]
            for i, row in zip(todo, done):
                out[i] = row
        return out  # type: ignore[return-value]

    def _decode(self, reqs: list[RowRequest], cons: list) -> list[dict]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unsatisfied row says so in its own columns
            results = {r.index: r for r in self.decoder.stream([r.prompt for r in reqs], cons, self.config)}
        return [result_row(req, results[i]) for i, req in enumerate(reqs)]

    def _decode_one(self, req: RowRequest, cc) -> dict:
        try:
            return self._decode([req], [cc])[0]
        except Exception as exc:  # noqa: BLE001 - a row's failure is that row's output
            return error_row(req, f"{type(exc).__name__}: {exc}")

