"""One error hierarchy for fstbeam.

Every error names the input that caused it and, where there is one, the fix.
Subclasses also derive from the builtin a caller would expect (ValueError, OSError).
"""
from __future__ import annotations


class Error(Exception):
    """Base class of every fstbeam error."""


class SpecError(Error, ValueError):
    """A constraint specification is malformed (empty word list, bad CEFR level, bad file)."""


class UnsatisfiableConstraintError(Error, ValueError):
    """The constraints admit no output at all (the compiled automaton is empty)."""

    def __init__(self, message: str, parts: tuple[str, ...] = ()):
        super().__init__(message)
        self.parts = parts


class InputError(Error, ValueError):
    """A value handed in cannot be used: a path (NUL byte, missing, a device where a file is
    needed), a device that does not exist here, a model folder without a model."""


class TokenizerError(Error, ValueError):
    """A tokenizer could not be loaded or understood."""


class ArtifactError(Error, ValueError):
    """A compiled-constraints artifact cannot be used."""


class ArtifactFormatError(ArtifactError):
    """The artifact was written by an incompatible format version."""


class ArtifactCorruptError(ArtifactError):
    """The artifact is truncated, edited or otherwise damaged."""


class TokenizerMismatchError(ArtifactError):
    """The artifact was compiled for a different tokenizer than the one in use."""


class GrammarError(Error, ValueError):
    """A grammar is unknown, raised while building, or has bad parameters or data."""


class DecodeError(Error, ValueError):
    """Decoding inputs or settings are invalid (beam size, prompt length, max_new_tokens)."""


class DisallowedTokenError(Error, ValueError):
    """A token was advanced that the constraints do not allow in the current state."""


class CacheError(Error, OSError):
    """fstbeam's cache folder ($FSTBEAM_CACHE) cannot be used (not a directory, not writable)."""


class BatchError(Error, ValueError):
    """A batch job cannot run: bad input file or column, an output folder of another job, or a
    missing optional dependency (Ray, pyarrow)."""


def warn_deprecated(old: str, new: str) -> None:
    """A DeprecationWarning pointing at the caller of the deprecated name."""
    import warnings

    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
