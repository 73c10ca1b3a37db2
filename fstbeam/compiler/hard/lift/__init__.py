"""The lift: a character DFA to a token automaton over a tokenizer's ids (`token_fsa.lift`).

`automaton.compile_hard` builds the character DFA, lifts it here and hands the token automaton
to `tables.build_tables`. The parts of the lift, each a module:

- `token_fsa`: the lift itself, a breadth-first walk of (trie node, character state) pairs into
  blocks of token arcs, and `TokenFSA`, what it returns;
- `trie_step`: one step of that walk over the token trie;
- `shared_walks` and `walk_memo`: interiors of large components (a string's body, free property
  names) walked once per shape and kept per process, each copy a shared block with an offset;
- `near_blocks`: blocks read like an interior's but for a few tokens of their own;
- `chain_blocks`, `chain_levels` and `group_exits`: positions of a counted string or a bounded
  repetition, shift-equivalent, walked once per group;
- `assemble`: what is reachable and can finish, renumbered into the token automaton's fields.

The lift never imports the pipeline above it (`automaton`, `tables`): tests/test_import_direction.py.
"""
