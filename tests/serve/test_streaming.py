"""TextStream: the deltas of a growing token prefix always add up to the final, stop-cut text,
with UTF-8 characters split over tokens and stop strings split over deltas (checked against
decoding the whole output at once, for every way of growing the prefix)."""
from __future__ import annotations

import itertools

import pytest

from fstbeam.serve.streaming import TextStream, cut_at_stop

# token id -> bytes: "é" split over two tokens, "日" over three, a None (control token)
TB = [b"a", b"b", b" ", b"\xc3", b"\xa9", b"\xe6", b"\x97", b"\xa5", None, b"END", b"E", b"ND", b"\n"]


def _final(tokens, stop):
    text = b"".join(TB[t] or b"" for t in tokens).decode("utf-8", "replace")
    return cut_at_stop(text, stop)[0]


@pytest.mark.parametrize("stop", [(), ("END",), ("b a", "\n"), ("ND", "aEN")])
def test_deltas_add_up_to_the_final_text(stop):
    outputs = [[0, 3, 4, 2, 5, 6, 7, 1], [0, 10, 11, 2, 1], [1, 2, 0, 12, 0], [8, 9, 0], [3, 0, 4], [0, 10, 0, 11, 2]]
    for toks in outputs:
        final = _final(toks, stop)
        for cuts in itertools.combinations(range(1, len(toks)), 2):  # the prefix grows in 3 steps
            s = TextStream(TB, stop)
            sent = "".join(s.feed(toks[:c]) for c in cuts)
            assert final.startswith(sent), (toks, cuts, sent, final)
            assert "\ufffd" not in sent or "\ufffd" in final  # no half character sent as a replacement
            assert sent + s.finish(final) == final


def test_text_that_may_start_a_stop_string_is_held_back():
    s = TextStream(TB, ("END",))
    assert s.feed([0, 10]) == "a"  # "aE": "E" may begin "END"
    assert s.feed([0, 10, 11]) == ""  # "aEND": stopped at "a"
    assert s.stopped and s.finish("a") == ""
