"""Per-token log-probabilities of an output, with the most likely alternatives at each step.

The search keeps one score per hypothesis, not one per token; this recomputes the tokens' scores
with one uncached forward pass over prompt + output. Under the default scoring (the model's full
softmax, ``renormalize=False``) they are the search's own: their sum plus the ending token's is
the hypothesis's ``logprob``. The server's ``logprobs``/``top_logprobs`` come from here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch

if TYPE_CHECKING:
    from .decoder import Decoder

__all__ = ["token_logprobs"]


@torch.inference_mode()  # type: ignore[untyped-decorator]  # torch is Any here (pyproject); it keeps the signature
def token_logprobs(decoder: Decoder, prompt: Any, ids: Sequence[int], top: int = 0) -> list[tuple[float, list[tuple[int, float]]]]:
    """For each of ``ids`` after ``prompt`` (text or ids, as for ``Decoder.encode``): (its
    log-probability, the ``top`` most likely tokens at that step with theirs, best first)."""
    ids = [int(t) for t in ids]
    if not ids:
        return []
    p = decoder.encode(prompt)
    dev, model = decoder.device, decoder.model
    if decoder.adapter.kind == "seq2seq":
        dec = torch.tensor([[decoder.adapter.decoder_start or 0] + ids[:-1]], device=dev)
        logits = model(input_ids=torch.tensor([p], device=dev), decoder_input_ids=dec).logits[0].float()
    else:
        logits = model(torch.tensor([p + ids], device=dev)).logits[0, len(p) - 1 : -1].float()
    lp = torch.log_softmax(logits[:, : decoder.vocab_size], -1)
    chosen = lp[torch.arange(len(ids), device=dev), torch.tensor(ids, device=dev)].tolist()
    if top <= 0:
        return [(c, []) for c in chosen]
    vals, idx = lp.topk(min(top, lp.shape[-1]), -1)
    return [(c, list(zip(i, v))) for c, i, v in zip(chosen, idx.tolist(), vals.tolist())]
