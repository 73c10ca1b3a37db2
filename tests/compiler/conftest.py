import pytest

from fstbeam.errors import TokenizerError


@pytest.fixture(scope="module")
def gemma():
    """The default (Gemma 3) vocabulary and its token index; skipped where it is not installed."""
    from fstbeam.compiler.light.token_index import TokenIndex
    from fstbeam.contract.vocab import load_vocab

    try:
        vocab = load_vocab("default")
    except (TokenizerError, ImportError, OSError) as exc:  # pragma: no cover - depends on the install
        pytest.skip(f"default tokenizer not available: {exc}")
    return vocab, TokenIndex.for_vocab(vocab)
