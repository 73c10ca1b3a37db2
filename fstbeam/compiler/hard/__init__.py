"""The hard pipeline: word lists, CEFR levels and grammars -> character DFA -> token automaton -> hard tables."""
