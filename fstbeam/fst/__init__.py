"""pynini mechanics: label conventions, builders, guarded optimization, inspection.

No domain knowledge lives here; see `fstbeam.grammars` and `fstbeam.compiler`.
"""
