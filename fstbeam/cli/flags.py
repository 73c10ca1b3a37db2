"""Flags shared by ``fstbeam generate`` and ``fstbeam batch``: the scoring over the allowed tokens
(``--renormalize``), the shortlist output layer (``--shortlist``) and the packed linear weights
(``--packed-weights``)."""
from __future__ import annotations

__all__ = ["add_scoring_flags", "scoring_options", "add_packed_weights_flag"]


def add_scoring_flags(group) -> None:
    """``--renormalize`` and ``--shortlist`` (also used by ``fstbeam batch``)."""
    group.add_argument("--renormalize", action="store_true",
                       help="score each step over the allowed tokens only (log-probabilities renormalized); "
                            "lets the shortlist output layer skip forbidden tokens' logits (docs/decoding.md)")
    group.add_argument("--shortlist", choices=("auto", "on", "off"), default="auto",
                       help="with --renormalize: compute the logits of the allowed tokens only: auto (where it pays, "
                            "the default), on (always; an error where the model's head cannot do it exactly), off")


def scoring_options(args) -> dict:
    """SearchConfig options of :func:`add_scoring_flags`; ``ValueError`` for ``--shortlist on``
    without ``--renormalize``."""
    if args.shortlist == "on" and not args.renormalize:
        raise ValueError("--shortlist on needs --renormalize: the full softmax (the default scoring) needs every "
                         "logit; add --renormalize, or use --shortlist auto/off")
    return {"renormalize": bool(args.renormalize), "shortlist": args.shortlist}


def add_packed_weights_flag(group) -> None:
    """``--packed-weights`` (runtime/packed_model.py): a model option, given to the Decoder."""
    group.add_argument("--packed-weights", choices=("auto", "on", "off"), default="auto",
                       help="on CPU, keep a packed copy of the model's linear weights for MKL: faster steps for "
                            "more memory; auto (models up to 1 GB of linear weights, the default), on, off")
