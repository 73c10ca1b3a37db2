"""The compiler-runtime contract: the data the compiler writes and the runtime reads.

numpy only (never torch, never pynini). Neither half reaches into the other; both import this.
See docs/architecture.md for who writes and who reads each part.

- `vocab`: the token byte strings of a tokenizer (`Vocab`, `load_vocab`);
- `layout`: constants and key encodings of the tables; `bitmask`: the bit convention of masks;
- `hard`: the hard automaton's tables (`HardTables`); `light`: per-request automata
  (`LightAutomaton`, with its distance field);
- `compiled`: `CompiledConstraints` (+ `Matcher`, `load_constraints`); `artifact`: its file form.
"""
