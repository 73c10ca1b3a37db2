"""Fuzz worker: load each artifact file named on stdin and use it; one JSON line per file.

Run in a subprocess with a memory limit by test_artifact_fuzz.py. Outcomes: ``ok`` (loaded and
every use worked), ``error:<Class>`` for an fstbeam error, ``FOREIGN:<Class>: message`` for
anything else. A crash (signal) or hang shows as a missing line, which the test reports.
"""
from __future__ import annotations

import json
import sys


def use(cc) -> None:
    """What a user does with a loaded artifact: per-request phrases, the host matcher, the
    pooled device tables and their mask and next-state lookups."""
    import torch

    from fstbeam.compiler.api import with_request
    from fstbeam.runtime.search.tables import InputConstraints, Tables

    cc2 = with_request(cc, phrases=["ab"])
    for c in (cc, cc2):
        m = c.matcher()
        for _ in range(4):
            ids = m.allowed_token_ids()
            text = [int(t) for t in ids if int(t) not in c.eos_ids]
            if not text:
                break
            m.advance(text[0])
        inp = InputConstraints.from_compiled(c)
        t = Tables([inp], vocab_width=c.width, eos_ids=c.eos_ids)
        hs = torch.tensor([t.hard_start(inp)])
        ls = torch.tensor([t.light_starts(inp)]).reshape(1, -1)
        mask = t.build_mask(hs, ls)
        allowed = [int(i) for i in c.matcher().allowed_token_ids() if int(i) not in c.eos_ids]
        tok = torch.tensor([allowed[0] if allowed else 0])
        t.hard_next(hs, tok)
        t.light_next(ls, tok)
        assert mask.shape[0] == 1
    _decode(cc)


_DECODER = []


def _decode(cc) -> None:
    """A short constrained beam search (scripted stub LM) over the loaded tables."""
    import warnings

    from fstbeam.runtime import Decoder

    from rt_helpers import StubLM

    if not _DECODER:
        _DECODER.append(Decoder(StubLM(cc.width, eos=list(cc.eos_ids)), cc.vocab, eos_ids=list(cc.eos_ids), device="cpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = _DECODER[0].generate([[1]], cc, beam_size=3, max_new_tokens=6)
    assert r.error is None or isinstance(r.error, str)


def main() -> int:
    from fstbeam import load_constraints
    from fstbeam.errors import Error

    from artifact_mutations import small_vocab

    vocab = small_vocab()
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        try:
            cc = load_constraints(path, tokenizer=vocab)
            use(cc)
            outcome = "ok"
        except Error as exc:
            outcome = f"error:{type(exc).__name__}"
        except Exception as exc:  # noqa: BLE001 - the point: report anything foreign
            outcome = f"FOREIGN:{type(exc).__name__}: {str(exc)[:300]}"
        print(json.dumps({"path": path, "outcome": outcome}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
