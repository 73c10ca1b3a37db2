"""fstbeam's allowed tokens equal llguidance's at every step, for regexes from real schemas.

For `pattern` fields of the development sample (whole-match, `^`/`$` at the ends dropped for
both engines), random texts of the pattern's language are tokenized with the default Gemma 3
tokenizer (262,144 ids) and walked token by token through fstbeam's `Matcher` and llguidance's
`LLMatcher` (its regex grammar); at each step the two allowed sets are compared over the text
tokens, and so are "may end here" (fstbeam final / llguidance accepting).

Where they may differ, by design (docs/structured.md, "Against llguidance"):
- dialect: llguidance reads Rust regex syntax, where `\\d \\w \\s` are Unicode classes and `.`
  excludes only `\\n`; ECMA-262's meanings (ASCII `\\d \\w`, its `\\s` set, `.` without line
  terminators) are written out as explicit classes for llguidance, so both get one language;
- a token holding a NUL byte: no fstbeam output can contain NUL (byte 0 is OpenFst's epsilon);
- forced text: where the text's next bytes are forced (the state has one way on), llguidance
  allows only the tokens of the canonical tokenization of the forced bytes, fstbeam every
  tokenization: there fstbeam's set must contain llguidance's (and equal it elsewhere).
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import ECMA_SPACE_CLASS, dev_patterns, dev_sample, random_walk  # noqa: E402

DEV = dev_sample()
WIDTH = 262144
MAX_STATES = 80  # patterns with bigger automata are skipped here (compile time, not correctness)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

_ECMA_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_", "s": ECMA_SPACE_CLASS}


def to_rust(pattern: str) -> str | None:
    """The ECMA pattern in Rust regex syntax with ECMA's class meanings (None: not translated)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt.lower() in _ECMA_CLASSES:
                body = _ECMA_CLASSES[nxt.lower()]
                if in_class:
                    if nxt.isupper():
                        return None
                    out.append(body)
                else:
                    out.append(f"[{'^' if nxt.isupper() else ''}{body}]")
            elif nxt in ("p", "P", "c", "k", "b", "B", "0") or nxt.isdigit():
                return None
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(c)
        elif c == "[":
            if pattern[i + 1:i + 2] == "]" or pattern[i + 1:i + 3] == "^]":
                return None
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif c in "^$" or (c == "{" and pattern[i + 1:i + 2] == ","):
            return None
        elif c == "(" and pattern[i + 1:i + 2] == "?" and pattern[i + 2:i + 3] not in (":", "<"):
            return None
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _dev_patterns() -> list[str]:
    """The sample's patterns anchored at most at their ends (the bodies llguidance's regex takes)."""
    out = []
    for p in dev_patterns():
        body = p[1:] if p.startswith("^") else p
        body = body[:-1] if body.endswith("$") and not body.endswith("\\$") else body
        if body and "^" not in body.replace("[^", "") and "$" not in body.replace("\\$", ""):
            out.append(body)
    return out


@pytest.mark.skipif(not Path(DEV).is_dir(), reason="development sample not present")
def test_masks_equal_llguidance_at_every_step():
    pytest.importorskip("llguidance")
    import llguidance
    import llguidance.hf

    import fstbeam
    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.compiler.structured.regex import regex_fst
    from fstbeam.contract.compiled import Matcher
    from fstbeam.contract.vocab import HTML_TAG
    from fstbeam.errors import SpecError
    from fstbeam.files.default_model import load_default_tokenizer

    tok = load_default_tokenizer()
    vocab = fstbeam.load_vocab("default")
    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=WIDTH)
    text = np.zeros(WIDTH, bool)
    text[np.asarray(vocab.text_ids)] = True
    nul = np.array([b is not None and b"\x00" in b for b in vocab.token_bytes[:WIDTH]] + [False] * max(0, WIDTH - len(vocab.token_bytes)))
    # (and not Gemma's HTML tag tokens, `<h1>`: llguidance takes every added token as special and
    # never allows one, where fstbeam reads them as the text they are: `Vocab`)
    tags = np.zeros(WIDTH, bool)
    tags[[i for content, i in tok.get_added_vocab().items() if HTML_TAG.fullmatch(content) and i < WIDTH]] = True
    assert text[tok.convert_tokens_to_ids("<h1>")]
    compare = text & ~nul[:WIDTH] & ~tags

    rng = random.Random(36)
    patterns = _dev_patterns()
    rng.shuffle(patterns)
    stats = dict(patterns=0, walks=0, steps=0, equal=0, forced_superset=0, forced_equal=0)
    for pattern in patterns:
        rust = to_rust(pattern)
        if rust is None:
            continue
        try:
            fst = regex_fst(pattern)
        except SpecError:
            continue
        if fst.num_states() > MAX_STATES:
            continue
        ll_grammar = llguidance.LLMatcher.grammar_from_regex(rust)
        if llguidance.LLMatcher(lltok, ll_grammar, log_level=0).is_error():
            continue
        dfa = fst_to_dfa(fst)
        cc = fstbeam.compile_constraints(regex=pattern, tokenizer=vocab)
        stats["patterns"] += 1
        for _ in range(2):
            s = random_walk(dfa, rng, max_len=40)
            if s is None:
                continue
            ids = tok.encode(s.decode("utf-8"), add_special_tokens=False)
            ours, theirs = Matcher(cc), llguidance.LLMatcher(lltok, ll_grammar, log_level=0)
            q = dfa.start
            stats["walks"] += 1
            for step in range(len(ids) + 1):
                a = np.zeros(WIDTH, bool)
                a[ours._text_allowed()] = True
                b = np.unpackbits(np.frombuffer(theirs.compute_bitmask(), np.uint8), bitorder="little")[:WIDTH].astype(bool)
                a, b = a & compare, b & compare
                forced = not dfa.final[q] and int((dfa.next[q] >= 0).sum()) == 1
                where = f"{pattern!r} text {s!r} step {step}"
                assert ours.is_final() == theirs.is_accepting(), where
                if forced:
                    assert not (b & ~a).any(), (where, [vocab.token_bytes[i] for i in np.nonzero(b & ~a)[0][:5]])
                    stats["forced_superset"] += 1
                    stats["forced_equal"] += bool((a == b).all())
                else:
                    diff = np.nonzero(a != b)[0]
                    assert len(diff) == 0, (where, [(vocab.token_bytes[i], bool(a[i])) for i in diff[:8]])
                    stats["equal"] += 1
                stats["steps"] += 1
                if step < len(ids):
                    ours.advance(ids[step])
                    assert theirs.consume_token(ids[step]), (where, theirs.get_error())
                    q = dfa.run(vocab.token_bytes[ids[step]], q)
        if stats["patterns"] >= 60:
            break
    print(stats)
    assert stats["patterns"] >= 40 and stats["equal"] >= 300, stats
