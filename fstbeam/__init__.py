"""fstbeam: finite-state constrained beam search.

    cc = fstbeam.compile_constraints(cefr="A1", tokenizer="default")
    results = fstbeam.Decoder().generate(["What do you eat for breakfast?"], cc)

Heavy parts load lazily, so ``import fstbeam`` needs neither torch nor pynini.
"""
from __future__ import annotations

from ._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "Compiler": ("fstbeam.compiler.compiler", "Compiler"),
    "compile_constraints": ("fstbeam.compiler.api", "compile_constraints"),
    "with_request": ("fstbeam.compiler.api", "with_request"),
    "compile_request": ("fstbeam.compiler.api", "compile_request"),
    "ConstraintRequest": ("fstbeam.compiler.request", "ConstraintRequest"),
    "CompiledConstraints": ("fstbeam.contract.compiled", "CompiledConstraints"),
    "Phrase": ("fstbeam.compiler.spec", "Phrase"),
    "AnyOf": ("fstbeam.compiler.light.alternatives", "AnyOf"),
    "load_constraints": ("fstbeam.contract.compiled", "load_constraints"),
    "Vocab": ("fstbeam.contract.vocab", "Vocab"),
    "load_vocab": ("fstbeam.contract.vocab", "load_vocab"),
    "Decoder": ("fstbeam.runtime.decoder", "Decoder"),
    "SearchConfig": ("fstbeam.runtime.config", "SearchConfig"),
    "GenerationResult": ("fstbeam.runtime.results", "GenerationResult"),
    "FstLogitsProcessor": ("fstbeam.runtime.logits_processor", "FstLogitsProcessor"),
    "serve": ("fstbeam.serve", "serve"),
    # Subpackages a user reaches as attributes (``fstbeam.grammars.run_cases("dates")``).
    "grammars": ("fstbeam.grammars", None),
}

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
