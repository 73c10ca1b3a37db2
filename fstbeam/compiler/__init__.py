"""Constraint spec -> character automaton -> token automaton -> tables -> artifact.

Never imports torch: a CPU box can compile without it.
"""
