"""The light pipeline: phrases, AnyOf, ordered items, prefixes and avoid phrases -> small token automata -> light tables, per request."""
