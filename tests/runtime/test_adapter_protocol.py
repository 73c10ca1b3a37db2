"""The ModelAdapter protocol: every adapter declares the capabilities the search reads, with the
values its model has; and the runtime asks adapters, never probes them or the model."""
from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
import torch

from fstbeam.errors import DecodeError
from fstbeam.runtime.model.adapter_protocol import ADAPTER_MEMBERS, ModelAdapter, check_adapter
from fstbeam.runtime.model.adapters import CausalLMAdapter, Seq2SeqAdapter, adapter_for
from fstbeam.runtime.model.packed_model import ModelPacking

from rt_helpers import StubLM, tiny_gemma3, tiny_gpt2, tiny_llama, tiny_t5

V = 40
RUNTIME = Path(__file__).resolve().parents[2] / "fstbeam" / "runtime"


def _bart(V):
    import transformers as T

    torch.manual_seed(0)
    cfg = T.BartConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)
    return T.BartForConditionalGeneration(cfg).eval()


ADAPTERS = {
    "llama": lambda: CausalLMAdapter(tiny_llama(V)),
    "gpt2": lambda: CausalLMAdapter(tiny_gpt2(V)),
    "gemma3": lambda: CausalLMAdapter(tiny_gemma3(V)),
    "t5": lambda: Seq2SeqAdapter(tiny_t5(V)),
    "bart": lambda: Seq2SeqAdapter(_bart(V)),
    "stub": lambda: StubLM(V),
}


def test_the_member_list_is_the_protocols():
    assert set(ADAPTER_MEMBERS) == set(typing._get_protocol_attrs(ModelAdapter))  # noqa: SLF001 (3.11 has no public one)


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_every_adapter_satisfies_the_protocol(name):
    ad = ADAPTERS[name]()
    assert isinstance(ad, ModelAdapter) and check_adapter(ad) is ad
    missing = [m for m in ADAPTER_MEMBERS if m not in dir(ad)]
    assert not missing
    assert ad.kind in ("causal", "seq2seq")
    assert isinstance(ad.vocab_size, int) and ad.vocab_size == V
    assert isinstance(ad.device, torch.device)
    assert ad.max_positions is None or isinstance(ad.max_positions, int)
    assert isinstance(ad.supports_refill, bool)
    assert isinstance(ad.model_eos_ids, tuple) and all(isinstance(e, int) and 0 <= e < V for e in ad.model_eos_ids)
    assert ad.packing is None or isinstance(ad.packing, ModelPacking)
    assert ad.no_head_reason is None or isinstance(ad.no_head_reason, str)
    if ad.kind == "seq2seq":
        assert isinstance(ad.decoder_start, int)
    else:
        assert ad.decoder_start is None


@pytest.mark.parametrize("name,kind,refill,start", [
    ("llama", "causal", True, None), ("gemma3", "causal", True, None),
    ("t5", "seq2seq", True, "decoder_start_token_id"),  # relative decoder positions
    ("bart", "seq2seq", False, "decoder_start_token_id"),  # absolute decoder positions
])
def test_capabilities_are_the_models(name, kind, refill, start):
    ad = ADAPTERS[name]()
    assert ad.kind == kind and ad.supports_refill is refill
    cfg = ad.model.config
    if start is not None:
        assert ad.decoder_start == getattr(cfg, start)
    eos = cfg.eos_token_id if ad.model.generation_config is None else ad.model.generation_config.eos_token_id
    assert ad.model_eos_ids == ((eos,) if isinstance(eos, int) else tuple(eos or ()))
    assert ad.max_positions == (getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None))


def test_adapter_for_picks_by_architecture():
    assert isinstance(adapter_for(tiny_t5(V)), Seq2SeqAdapter)
    assert isinstance(adapter_for(tiny_llama(V)), CausalLMAdapter)


def test_an_encoder_decoder_has_no_output_projection_and_refuses_hidden_states():
    ad = ADAPTERS["t5"]()
    assert ad.output_projection() is None and "encoder-decoder" in ad.no_head_reason
    with pytest.raises(DecodeError, match="logits only"):
        ad.prefill([[1, 2]], hidden=True)


def test_a_non_adapter_is_refused_naming_what_it_lacks():
    from fstbeam.runtime import Decoder

    from rt_helpers import tiny_vocab

    class Partial:  # an adapter of an older fstbeam: no capability attributes
        kind, vocab_size = "causal", V

        def prefill(self, prompts): ...

    with pytest.raises(DecodeError, match=r"lacks device, max_positions, supports_refill.*output_projection"):
        Decoder(Partial(), tiny_vocab(), eos_ids=[0], device="cpu")


# ---------------------------------------------------------------------------------------------
# No capability probes in the runtime
# ---------------------------------------------------------------------------------------------
# The one module that reads a Hugging Face model's configuration (fields differ per architecture).
HF_READER = "hf_model.py"
# getattr/hasattr calls of other kinds: (module, first argument) -> why.
ALLOWED = {
    ("beam.py", "self"): "maps a function over the dataclass fields of the beam",
    ("beam.py", "other"): "the same field of another beam",
    ("pool.py", "sub"): "result fields by name",
    ("config.py", "self"): "validates SearchConfig fields by name",
    ("config.py", "self.eos_ids"): "a user value: iterable or not",
    ("config.py", "e"): "a user value: an integer or not",
    ("decoder.py", "self.tokenizer"): "a user tokenizer: chat template and EOS (a Vocab has neither)",
    ("decoder.py", "ids"): "apply_chat_template returns a list or a BatchEncoding by transformers version",
    ("continuous.py", "self._adapter"): "the server's proxy of an adapter (locks its model calls, forwards the rest)",
}


def _probes():
    for path in sorted(RUNTIME.rglob("*.py")):
        if path.name == HF_READER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
                yield path.name, ast.unparse(node.args[0]), node.lineno


def test_the_runtime_reads_capabilities_instead_of_probing():
    found = list(_probes())
    bad = [f"{f}:{line} {arg}" for f, arg, line in found if (f, arg) not in ALLOWED]
    assert not bad, f"getattr/hasattr probes in fstbeam/runtime (read the adapter's declared attributes): {bad}"
    assert len(found) <= 15  # a handful of other kinds (see ALLOWED)


def test_the_probe_check_finds_a_probe(tmp_path, monkeypatch):
    """The check above is not vacuous: a probe of the adapter in a runtime module is reported."""
    src = RUNTIME / "search" / "engine.py"
    fake = tmp_path / "engine.py"
    fake.write_text(src.read_text() + "\n\ndef _x(self):\n    return getattr(self.adapter, 'supports_refill', True)\n")
    monkeypatch.setattr(f"{__name__}.RUNTIME", tmp_path)
    assert [(f, a) for f, a, _ in _probes()] == [("engine.py", "self.adapter")]
