"""The word-list automaton engine: minimal acyclic DFAs of word forms and the running-text DFA
around them (used by the compiler and the grammars)."""
