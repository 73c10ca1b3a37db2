"""What the search needs from a model: the :class:`ModelAdapter` protocol.

The decoder talks to a model only through an adapter (:mod:`.adapters` has the Hugging Face
ones). An adapter declares every capability below as a plain attribute or method; nothing is
discovered by probing the object at decode time. An adapter that cannot do something says so
(``supports_refill = False``, ``output_projection()`` returning ``None``, ``packing = None``).

Operations over an opaque per-batch *state* (cache plus bookkeeping):

- ``prefill(inputs, hidden=False) -> (out [N, ...], state)``: encode new inputs (prompts of a
  causal LM, sources of an encoder-decoder); ``out`` is the first output token's logits
  ``[N, V]`` float32, or with ``hidden=True`` the final hidden states ``[N, d]`` (the input of
  the output layer, for the shortlist: only asked when ``output_projection()`` gave a head);
- ``step(state, tokens [R], hidden=False) -> out [R, ...]``: append one token to every row;
- ``select(state, index [R'])``: keep/reorder/repeat rows (beam selection, retiring inputs),
  reusing ``state`` (it may be changed in place; use the returned one);
- ``take(state, index [R'])``: a new state with those rows, ``state`` untouched (pausing inputs);
- ``concat(states) -> state``: rows of several states together (streaming refill).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, Sequence, runtime_checkable

from ...errors import DecodeError

if TYPE_CHECKING:
    import torch

    from .packed_model import ModelPacking
    from .shortlist import OutputHead

__all__ = ["ModelAdapter", "AdapterKind", "ADAPTER_MEMBERS", "check_adapter"]

AdapterKind = Literal["causal", "seq2seq"]


@runtime_checkable
class ModelAdapter(Protocol):
    """One language-model step for a set of rows (see the module docs)."""

    #: ``"causal"`` (decoder only: the prompt is the start of the output sequence) or
    #: ``"seq2seq"`` (an encoder reads the source; the decoder starts at ``decoder_start``).
    kind: AdapterKind
    #: Width of the logits (the output layer's rows; may exceed the tokenizer's vocabulary).
    vocab_size: int
    #: Where the adapter's tensors live (the search's tensors go there too).
    device: torch.device
    #: The longest sequence the model takes (prompt + output for a causal LM, the source for an
    #: encoder-decoder), or ``None`` when unbounded or unknown.
    max_positions: int | None
    #: Whether rows may join a batch mid-decode (``concat`` of states of different lengths):
    #: needs positions that do not depend on the batch (explicit or relative ones).
    supports_refill: bool
    #: The first decoder input of an encoder-decoder; ``None`` for a causal LM.
    decoder_start: int | None
    #: EOS ids the model's own configuration names (the decoder's default stop ids).
    model_eos_ids: tuple[int, ...]
    #: The wrapped model (``Decoder.score`` runs it), or ``None`` for a model-less adapter.
    model: Any
    #: The model's packed linear layers (:mod:`.packed_model`), or ``None`` when the adapter
    #: has none to pack; the shortlist packs its static rows when ``packing.mode != "off"``.
    packing: ModelPacking | None
    #: Why ``output_projection()`` gave ``None`` (set once it has), else ``None``.
    no_head_reason: str | None

    def output_projection(self) -> OutputHead | None:
        """The output layer as weight/bias/soft-cap when the logits are exactly
        ``softcap(hidden @ W.T + b)`` (then ``hidden=True`` works), else ``None``."""
        ...

    def prefill(self, inputs: Sequence[Sequence[int]], hidden: bool = False) -> tuple[torch.Tensor, Any]: ...

    def step(self, state: Any, tokens: torch.Tensor, hidden: bool = False) -> torch.Tensor: ...

    def select(self, state: Any, index: torch.Tensor) -> Any: ...

    def take(self, state: Any, index: torch.Tensor) -> Any: ...

    def concat(self, states: Sequence[Any]) -> Any: ...


ADAPTER_MEMBERS: tuple[str, ...] = (
    "kind", "vocab_size", "device", "max_positions", "supports_refill", "decoder_start", "model_eos_ids", "model",
    "packing", "no_head_reason", "output_projection", "prefill", "step", "select", "take", "concat",
)


def check_adapter(obj: object) -> ModelAdapter:
    """``obj`` as a :class:`ModelAdapter`, or a DecodeError naming the members it lacks."""
    if isinstance(obj, ModelAdapter):
        return obj
    missing = [name for name in ADAPTER_MEMBERS if name not in dir(obj)]
    raise DecodeError(
        f"{type(obj).__name__} is not a Hugging Face model or a model adapter: it lacks {', '.join(missing)} "
        "(see fstbeam.runtime.model.adapter_protocol.ModelAdapter)"
    )
