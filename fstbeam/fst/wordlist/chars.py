"""Characters of running text that the word-list languages share.

Kept as plain strings so linguists can read and change them; `wordlist.py` turns them into
automata.
"""
from __future__ import annotations

# Punctuation that may follow a word before the space ("Hello," "Yes!" "(really)" "said.").
CLOSING = ".,!?;:)\"'"
# Punctuation that may precede a word after the space ('"Hello' "(yes").
OPENING = "(\"'"
# One of these separates words. A single space is what a learner's text needs; a newline lets
# a model end a line.
SPACES = " \n"
# Joins two words without a space: "well-known", "twenty-one".
JOINERS = "-"
# Longest run of closing / opening marks accepted ("?!", '."' and "..." fit).
MAX_CLOSING = 3
MAX_OPENING = 2
DIGITS = "0123456789"
# Separators inside numbers: decimals and thousands (3.5, 1,000), times (6:30).
NUMBER_INNER = ".,:"
# After a number: a percentage (10%, 3.5%) or an English ordinal suffix, which agrees with the
# last digits (1st 2nd 3rd 4th, but 11th 12th 13th; any other last digit takes "th").
PERCENT = "%"
ORDINAL_SUFFIX = {"1": "st", "2": "nd", "3": "rd"}
ORDINAL_OTHER = "th"
APOSTROPHES = ("'", "\u2019")

# Contraction suffix -> the full word it stands for, and the hosts it may attach to
# (None: any allowed word). "n't" is handled separately because its host changes
# (can't, won't, shan't).
CONTRACTIONS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "m": ("am", ("i",)),
    "re": ("are", ("you", "we", "they", "who", "what", "there", "where", "here")),
    "s": ("is", None),  # it's / Tom's (is, has or possessive)
    "ve": ("have", ("i", "you", "we", "they", "who", "could", "would", "should", "might", "must")),
    "ll": ("will", ("i", "you", "he", "she", "it", "we", "they", "that", "there", "who", "what")),
    "d": ("would", ("i", "you", "he", "she", "it", "we", "they", "who", "that", "there")),
}
NEGATABLE = (
    "do", "does", "did", "is", "are", "was", "were", "have", "has", "had",
    "could", "should", "would", "must", "need", "might", "ca", "wo", "sha",
)
# Irregular negative hosts: can't = can + not, won't = will + not, shan't = shall + not.
IRREGULAR_NEGATIVE_HOSTS = {"ca": "can", "wo": "will", "sha": "shall"}
