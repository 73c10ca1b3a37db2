"""``Decoder.score``: the log-probability of a given continuation, from one uncached forward pass."""
from __future__ import annotations

from typing import Any, Sequence

import torch

from ..errors import DecodeError

__all__ = ["score"]


@torch.inference_mode()  # type: ignore[untyped-decorator]  # torch is Any here (pyproject); it keeps the signature
def score(decoder: Any, prompt: Any, token_ids: Sequence[int], *, eos: bool = True) -> float:
    """Log-probability of ``token_ids`` (then EOS, the first of ``eos_ids``, when ``eos``) after
    ``prompt`` under ``decoder``'s model (a `Decoder`)."""
    ids = decoder.encode(prompt)
    cont = list(token_ids) + ([decoder.eos_ids[0]] if eos else [])
    model = decoder.model
    if model is None:
        raise DecodeError("score() needs a Hugging Face model")
    dev = decoder.device
    if decoder.adapter.kind == "seq2seq":
        start = decoder.adapter.decoder_start or 0
        dec = torch.tensor([[start] + cont[:-1]], device=dev)
        logits = model(input_ids=torch.tensor([ids], device=dev), decoder_input_ids=dec).logits[0].float()
    else:
        seq = torch.tensor([ids + cont], device=dev)
        logits = model(seq).logits[0, len(ids) - 1 : -1].float()
    lp = torch.log_softmax(logits, -1)
    return float(lp[torch.arange(len(cont)), torch.tensor(cont, device=dev)].sum())
