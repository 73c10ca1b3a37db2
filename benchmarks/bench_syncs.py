"""Host syncs per search step: how often the search reads a device value back to Python.

    python benchmarks/bench_syncs.py            # table + benchmarks/results/syncs.json
    python benchmarks/bench_syncs.py --where    # also the call sites (file:line) of each sync

On CUDA every such read (``.item()``, ``.tolist()``, ``bool(t)``, ``int(t)``, ``nonzero``,
boolean-mask indexing, ``torch.unique``, ``.cpu()``...) stalls the host until the GPU queue
drains, so the count is a property of the code, measured here on CPU with a tiny random model:
the Tensor methods are patched to count calls made by the search engine (``fstbeam/runtime``),
leaving out the model adapter (``prefill``/``step``/``select``...) and the kernel dispatch,
which are not the search step's own work. The figure is syncs per search step over a whole
decode (refills and result building included).
"""
from __future__ import annotations

import argparse
import collections
import json
import string
import sys
import traceback
import warnings
from pathlib import Path

import torch

_COUNT = {"n": 0, "off": 0}
_SITES: collections.Counter = collections.Counter()
_PATCHED: list = []


def _site() -> str:
    for fr in reversed(traceback.extract_stack()[:-2]):
        if "fstbeam" in fr.filename and "bench_syncs" not in fr.filename:
            return f"{Path(fr.filename).parent.name}/{Path(fr.filename).name}:{fr.lineno}"
    return "?"


def _hit(where: bool) -> None:
    if _COUNT["off"] == 0 and _COUNT.get("on"):
        _COUNT["n"] += 1
        if where:
            _SITES[_site()] += 1


def _is_bool_index(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)


def patch(where: bool) -> None:
    """Count the Tensor operations that need the value of a tensor on the host."""
    T = torch.Tensor

    def wrap(owner, name, cond=None):
        orig = getattr(owner, name)

        def f(*a, **k):
            if cond is None or cond(*a, **k):
                _hit(where)
            _COUNT["off"] += 1  # nested calls (e.g. tolist -> item) count once
            try:
                return orig(*a, **k)
            finally:
                _COUNT["off"] -= 1

        setattr(owner, name, f)
        _PATCHED.append((owner, name, orig))

    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "cpu", "numpy", "nonzero",
                 "masked_select", "unique"):
        wrap(T, name)
    wrap(T, "__getitem__", lambda self, idx: _is_bool_index(idx))
    wrap(T, "__setitem__", lambda self, idx, v: _is_bool_index(idx))
    for name in ("nonzero", "unique", "masked_select", "argwhere"):
        wrap(torch, name)
    # repeat_interleave with tensor repeats and no output_size needs the total on the host
    wrap(torch, "repeat_interleave", lambda *a, **k: len(a) > 1 and isinstance(a[1], torch.Tensor) and "output_size" not in k)


def exclude(obj, names) -> None:
    """Calls of ``obj.<name>`` do not count (model adapter, kernels)."""
    for name in names:
        orig = getattr(obj, name, None)
        if orig is None:
            continue

        def f(*a, _orig=orig, **k):
            _COUNT["off"] += 1
            try:
                return _orig(*a, **k)
            finally:
                _COUNT["off"] -= 1

        setattr(obj, name, f)


def scenarios(vocab):
    from fstbeam.compiler.api import compile_constraints

    c = lambda **kw: compile_constraints(tokenizer=vocab, **kw)  # noqa: E731
    words = ["the", "cat", "a", "dog", "sat", "on", "mat"]
    base = dict(beam_size=4, max_new_tokens=16, batch_size=4)
    return {
        "unconstrained": (None, base),
        "unconstrained_to_limit": (None, dict(base, stopping="exhaustive")),
        "word_list": (c(words=words), base),
        "phrases_dba": (c(phrases=["cat", "dog"]), base),
        "prefix_avoid": (c(prefix="the", avoid=["dog"]), base),
        "streaming_least_advanced": (None, dict(base, batch_size=3, expand="least_advanced")),
        "renormalize_prune_nbest": (c(words=words), dict(base, renormalize=True, prune_threshold=5.0, nbest=2)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--where", action="store_true", help="print the call sites of the syncs")
    ap.add_argument("--out", default="benchmarks/results/syncs.json")
    args = ap.parse_args(argv)
    from transformers import LlamaConfig, LlamaForCausalLM

    from fstbeam.contract.vocab import Vocab
    from fstbeam.runtime import Decoder

    letters = string.ascii_lowercase
    toks = ["<eos>"] + list(letters) + [" " + c for c in letters] + [" ", ".", " the", " cat", " dog", "the", "cat"]
    vocab = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab.width, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                                         bos_token_id=None, eos_token_id=0, pad_token_id=None)).eval()
    dec = Decoder(model, vocab, eos_ids=[0], device="cpu")
    patch(args.where)
    exclude(dec.adapter, ("prefill", "step", "select", "concat", "take"))
    for modname in ("fstbeam.kernels.dispatch", "fstbeam.runtime._kernels"):
        mod = sys.modules.get(modname)
        if mod is None:
            try:
                __import__(modname)
                mod = sys.modules[modname]
            except ImportError:
                continue
        exclude(mod, ("masked_topk", "best_in_sets"))
    prompts = [[1, 2, 3], [4, 5], [6], [7, 8, 9, 10], [11, 12], [13]]
    out = {}
    print(f"{'scenario':28s} {'steps':>6s} {'syncs':>6s} {'per step':>9s}")
    for name, (cc, kw) in scenarios(vocab).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _COUNT.update(n=0, on=True)
            res = dec.generate(prompts, cc, **{"preset": "plain", **kw})  # the settings as given (the API's default preset is the format's since issue 39)
            _COUNT["on"] = False
        steps = dec.last_stats.steps
        out[name] = {"steps": steps, "syncs": _COUNT["n"], "per_step": _COUNT["n"] / steps,
                     "outputs": [[r.token_ids, r.score] for r in res]}
        print(f"{name:28s} {steps:6d} {_COUNT['n']:6d} {_COUNT['n'] / steps:9.2f}")
    if args.where:
        for site, n in _SITES.most_common():
            print(f"  {n:6d}  {site}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
