"""Building blocks shared by the grammars (import them by module, e.g.
``from fstbeam.grammars.lib import casing``):

- `fsts`: literal strings, character sets, unions, byte Sigma.
- `tsv`: reading data files with errors that name the file and line.
- `casing`: capitalized / upper-case variants of a language.
- `numbers`: numerals with digits, ordinal suffixes, number words, the digits filter.
- `filters`: contains / avoids / "every occurrence is valid" over whole texts.
- `inflection`: English spelling rules for regular inflection, irregular forms.
- `phrases`: the word-boundary rule for must-appear / avoid phrases (a Python oracle).

Running text made of words from a list (spaces, punctuation, contractions, digits) is the
word-list engine in `fstbeam.fst.wordlist` (a layer below the grammars and the compiler).
"""
