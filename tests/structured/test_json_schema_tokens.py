"""Random texts of a schema's character automaton, tokenized by the default Gemma 3 tokenizer,
walk the compiled token tables: each token is among the allowed ones at its step (the mask the
decoder reads) and the output may end after the last. The character automaton is checked by
`jsonschema` elsewhere (`test_json_schema_oracle.py`); this checks the lift of what it accepts,
including texts no test instance writes (escapes, astral code points, long numbers)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from regex_oracle import dev_sample

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from automaton_walks import random_texts  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SCHEMAS = ["Github_easy---o19071", "Github_medium---o8480", "Github_medium---o46423", "Handwritten---oneof5_2",
           "Glaiveai2K---calculate_area_8e4a54fc", "Snowplow---sp_378_Normalized"]


@pytest.mark.skipif(not dev_sample().is_dir(), reason="development sample not present")
def test_random_texts_of_dev_schemas_walk_the_token_tables():
    import fstbeam
    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
    from fstbeam.contract.compiled import Matcher
    from fstbeam.files.default_model import load_default_tokenizer

    tok = load_default_tokenizer()
    vocab = fstbeam.load_vocab("default")
    walked = 0
    for name in SCHEMAS:
        schema = json.loads((dev_sample() / f"{name}.json").read_text())["schema"]
        cc = fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab)
        for data in random_texts(fst_to_dfa(json_schema_fst(schema)), 15, seed=5, budget=120):
            text = data.decode("utf-8")
            ids = tok.encode(text, add_special_tokens=False)
            if tok.decode(ids) != text:  # (a text the tokenizer does not give back: not this text's walk)
                continue
            m = Matcher(cc)
            for step, i in enumerate(ids):
                allowed = m.allowed_token_ids()  # (sorted)
                at = int(np.searchsorted(allowed, i))
                assert at < len(allowed) and allowed[at] == i, (name, text, step, vocab.token_bytes[i])
                m.advance(i)
            assert m.is_final(), (name, text)
            walked += 1
    assert walked >= 60
