"""What a request should return, computed offline with the public API (the oracle)."""
from __future__ import annotations

import warnings

SETTINGS = dict(beam_size=3, max_tokens=8)


def offline_result(dec, prompt: str, constraints: dict | None, *, beam_size=3, max_tokens=8, n=1, artifact=None):
    """``Decoder.generate`` with the settings ``fstbeam generate`` uses, and the constraints built
    with ``compile_constraints`` / ``with_request`` (phrases on top of a word list or artifact)."""
    from fstbeam import AnyOf, Phrase, compile_constraints, load_constraints, with_request
    from fstbeam.runtime.defaults import generate_defaults

    c = dict(constraints or {})
    sc = c.pop("sentence_case", False)
    phrases = [AnyOf(*p, sentence_case=sc) if isinstance(p, list) else Phrase(p, sentence_case=sc)
               for p in c.pop("phrases", [])]
    light = dict(phrases=phrases, avoid=c.pop("avoid", []), prefix=c.pop("prefix", None), ordered=c.pop("ordered", False))
    base = None
    if "artifact" in c:
        base = load_constraints(artifact, tokenizer=dec.tokenizer)
    elif "words" in c:
        base = compile_constraints(words=c.pop("words"), tokenizer=dec.vocab, leading_space=True)
    has_light = light["phrases"] or light["avoid"] or light["prefix"] is not None
    if base is None:
        cc = compile_constraints(tokenizer=dec.vocab, **light) if has_light else None
    else:
        cc = with_request(base, **light) if has_light else base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = dec.generate([prompt], cc, beam_size=beam_size, max_new_tokens=max_tokens, nbest=n, batch_size=4,
                           **generate_defaults())
    return r
