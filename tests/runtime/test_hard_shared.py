"""The pooled device tables read shared interiors (docs/tables.md) as `HardTables` does: every
(state, token) next state and every mask row agree with the host-side lookups, for a shared
automaton pooled beside an unshared one (offsets, exits and block ids all shifted)."""
from __future__ import annotations

import numpy as np
import pynini
import torch

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.contract.vocab import Vocab
from fstbeam.kernels.bitmask import unpack_bitmask_torch
from fstbeam.runtime.search.tables import InputConstraints, Tables

PIECES = [chr(c) for c in range(32, 127)] + ['"a', "ab", '",', '":"', "é", '"}', 'a"', '{"', '"b":']
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
          "required": ["a", "b"], "additionalProperties": False}


def test_pooled_lookups_and_masks_match_the_host_tables():
    raw = [p.encode() for p in PIECES] + [bytes([c]) for c in range(128, 256)]
    vocab = Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name="rt-shared")
    trie = token_trie(vocab)
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(SCHEMA)))
    shared = build_tables(lift(dfa, trie, vocab.width, share_walks=True), vocab, dense_min=3, sparse_max=4)
    plain = build_tables(lift(dfa, trie, vocab.width, share_walks=False), vocab, dense_min=3, sparse_max=4)
    assert shared.shared and not plain.shared
    V = vocab.width
    text_ids = np.flatnonzero(shared.token_first_byte >= 0)
    inputs = [InputConstraints(plain, (), 0, True, text_ids), InputConstraints(shared, (), 0, True, text_ids)]
    tb = Tables(inputs, vocab_width=V, eos_ids=vocab.eos_ids)
    for inp, h in zip(inputs, (plain, shared)):
        off = tb.hard_offset(inp)
        S = h.num_states
        states = torch.arange(S).repeat_interleave(V) + off
        toks = torch.arange(V).repeat(S)
        got = tb.hard_next(states, toks)
        want = torch.tensor([h.next_state(q, t) for q in range(S) for t in range(V)])
        assert torch.equal(torch.where(want >= 0, want + off, -1), got)
        masks = unpack_bitmask_torch(tb.build_mask(torch.arange(S) + off, torch.zeros(S, 0, dtype=torch.long)), V)
        for q in range(S):
            allowed = set(h.allowed_text_tokens(q).tolist()) - set(vocab.eos_ids)
            assert set(torch.nonzero(masks[q]).flatten().tolist()) == allowed, q
