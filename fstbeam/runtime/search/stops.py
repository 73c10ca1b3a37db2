"""Stop strings inside the search (``SearchConfig.stop``, OpenAI's ``stop``).

A candidate whose token makes its hypothesis's text contain a stop string does not live on: it
*finishes* there, like a hypothesis that takes an end-of-sequence id. It enters the input's
n-best pool with its score (the stop token's log-probability included, as an EOS id's is) and
competes with the other finished hypotheses for the n best places and in the optimal-stopping
test; its output is the text before the stop string (``finish_reason="stop"``). The match is
on bytes, so a stop string may span token boundaries ("\\n\\n" from "\\n" + "\\n") and a token may
overrun it ("end." for the stop "."): the text is cut at the stop string's first byte, and the
tokens returned are those that hold some of the kept text.

Matching runs on the host over each live input's candidates (the parent's last few tokens and
the candidate token): a parent never contains a stop string (it would have finished), so a new
occurrence ends inside the new token and begins at most ``len(stop) - 1`` bytes before it.

Under constraints a hypothesis may end only where its automata accept, and the search knows
their states at token boundaries only: a constrained input's stop finish is taken where the
stop string begins exactly at the new token (the kept text is the parent's, in an accepting
state); other stop hits of a constrained input are dropped (they can neither live on, holding
the stop string, nor end). An unconstrained input (no automaton but the text tokens) takes
every stop hit.
"""
from __future__ import annotations

from typing import Sequence

import torch

from .beam import NEG_INF, STOP_EOS
from .pool import merge_finished

__all__ = ["StopRule", "STOP_EOS", "pool_stops", "kept_output"]


class StopRule:
    """The stop strings of one input, as bytes, with the vocabulary's token bytes."""

    def __init__(self, stop: Sequence[str], token_bytes: Sequence[bytes | None]):
        self.texts = tuple(stop)
        self.pats = tuple(s.encode("utf-8") for s in stop)
        self.token_bytes = token_bytes
        self.back = max(len(p) for p in self.pats) - 1  # bytes of the parent a match may begin in

    def tail(self, tokens: Sequence[int]) -> bytes:
        """The last ``back`` bytes of the text of ``tokens`` (a parent's last tokens)."""
        if not self.back:
            return b""
        tb = self.token_bytes
        return b"".join(tb[t] or b"" for t in tokens if 0 <= t < len(tb))[-self.back:]

    def cut(self, tail: bytes, token: int) -> int | None:
        """Bytes to drop from the end of the text (parent + ``token``) when ``token`` completes
        a stop string after a parent ending in ``tail``; None when it completes none."""
        tb = self.token_bytes
        tok = (tb[token] if 0 <= token < len(tb) else None) or b""
        if not tok:
            return None
        text = tail + tok
        starts = [i for i in (text.find(p) for p in self.pats) if i >= 0]
        return len(text) - min(starts) if starts else None


def pool_stops(beam, slots, adv, tables, scoring, min_new_tokens: int = 0) -> torch.Tensor:
    """Stop hits among the candidates ``adv`` (:func:`.step.advance`'s tuple) of the slots with a
    :class:`StopRule` (``slots[i].stop``) enter the pools (:func:`.pool.merge_finished`); returns
    the candidate scores with every hit set to -inf (no hit lives on). Before ``min_new_tokens``
    output tokens a hit ends nothing (as EOS may not: :mod:`.guards`)."""
    constrained = [_constrained(sl.req.constraints) for sl in slots]
    cand_s, cand_t, parent, _, _, _ = adv
    which = [i for i, sl in enumerate(slots) if sl.stop is not None]
    n, k = beam.alive.shape
    L = beam.hist.shape[2]
    dev = cand_s.device
    B = max(1, max(slots[i].stop.back for i in which))  # tokens each parent's tail is read from
    m, C = len(which), cand_s.shape[1]
    idx = torch.tensor(which, dtype=torch.long, device=dev)
    sub_parent = parent.index_select(0, idx)  # [m, C] flat beam entries
    flat = sub_parent.reshape(-1)
    ok_end = tables.accepting(beam.hstate.view(-1)[flat], beam.flat_lstate()[flat]).view(m, C)
    want = [[slots[i].steps - B + j for j in range(B)] for i in which]  # the parents' last B output positions
    pos = torch.tensor(want, dtype=torch.long, device=dev)
    tails = beam.hist.view(n * k, L).index_select(0, flat).view(m, C, L).gather(2, pos.clamp(min=0)[:, None, :].expand(m, C, B))
    tails = torch.where((pos >= 0)[:, None, :], tails, torch.full_like(tails, -1)).view(m, C * B)  # -1: before the output
    # one read from the device: scores, tokens, parents, acceptance, the parents' last tokens
    host = torch.cat([cand_s.index_select(0, idx).double(), cand_t.index_select(0, idx).double(), sub_parent.double(),
                      ok_end.double(), tails.double()], 1).tolist()
    kill: list[tuple[int, int]] = []
    hits: dict[int, list[tuple[int, int]]] = {}  # slot -> [(candidate, bytes cut)]
    for row, i in zip(host, which):
        sl, rule = slots[i], slots[i].stop
        sc, tok, par, acc, tl = row[:C], row[C:2 * C], row[2 * C:3 * C], row[3 * C:4 * C], row[4 * C:]
        best: dict[tuple, tuple[int, int]] = {}
        for c in range(C):
            if sc[c] == NEG_INF:
                continue
            t = int(tok[c])
            cut = rule.cut(rule.tail([int(x) for x in tl[c * B:(c + 1) * B]]), t)
            if cut is None:
                continue
            kill.append((i, c))  # holds a stop string: never lives on
            tb = rule.token_bytes[t] or b""
            if sl.steps < min_new_tokens or (constrained[i] and not (cut == len(tb) and acc[c])):
                continue  # a constrained input ends only at a token boundary where it accepts
            kept = len(tb) - cut
            key = (par[c], tb[:kept] if kept >= 0 else kept)  # one output per kept text of a parent
            if key not in best or sc[c] > sc[best[key][0]]:
                best[key] = (c, cut)
        if best:
            hits[i] = list(best.values())
    if not kill:
        return cand_s
    if hits:
        _merge(beam, hits, adv, tables, scoring, slots)
    ki = torch.tensor(kill, dtype=torch.long, device=dev)
    out = cand_s.clone()
    out[ki[:, 0], ki[:, 1]] = NEG_INF
    return out


def _constrained(c) -> bool:
    """Automata beyond the text tokens (a stop string then ends only where they accept)."""
    return bool(c.lights) or c.hard is not None


def _merge(beam, hits: dict[int, list[tuple[int, int]]], adv, tables, scoring, slots) -> None:
    """The stop hits ``hits`` (slot -> [(candidate, cut bytes)]) enter the pools (each checked
    by its input's output check, where it has one: `.pool.checked_tiers`)."""
    scores, cand_t, parent, _, _, _ = adv
    n, k = beam.alive.shape
    L = beam.hist.shape[2]
    dev = scores.device
    m = max(len(v) for v in hits.values())
    c_host = [[0] * m for _ in range(n)]
    cut_host = [[0] * m for _ in range(n)]
    ok_host = [[False] * m for _ in range(n)]
    for i, v in hits.items():
        for j, (c, b) in enumerate(v):
            c_host[i][j], cut_host[i][j], ok_host[i][j] = c, b, True
    c_idx = torch.tensor(c_host, dtype=torch.long, device=dev)
    ok = torch.tensor(ok_host, dtype=torch.bool, device=dev)
    cut = torch.tensor(cut_host, dtype=torch.long, device=dev)
    raw = torch.where(ok, scores.gather(1, c_idx), torch.full((n, m), NEG_INF, device=dev))
    par = parent.gather(1, c_idx)  # [n, m]
    hist = beam.hist.view(n * k, L)[par.view(-1)].view(n, m, L).clone()
    pos = beam.length.clamp(max=L - 1)
    hist.scatter_(2, pos[:, None, None].expand(n, m, 1), cand_t.gather(1, c_idx).unsqueeze(-1))
    met = tables.met(beam.flat_lstate()[par.view(-1)]).view(n, m, beam.P) if beam.P else None
    length = (beam.length + 1)[:, None].expand(n, m)
    eos = torch.full((n, m), STOP_EOS, dtype=torch.long, device=dev)
    merge_finished(beam, ok, raw, length, eos, hist, met, scoring, 0, cut=cut, slots=slots)


def kept_output(tokens: Sequence[int], cut: int, token_bytes: Sequence[bytes | None]) -> tuple[list[int], bytes]:
    """(the tokens that hold some of the kept text, the kept text's bytes) of an output whose
    last ``cut`` bytes a stop string took."""
    tb = token_bytes
    parts = [(tb[t] or b"") if 0 <= t < len(tb) else b"" for t in tokens]
    text = b"".join(parts)
    keep = len(text) - cut
    out, size = [], 0
    for t, b in zip(tokens, parts):
        if size >= keep:
            break
        out.append(t)
        size += len(b)
    return out, text[:keep]
