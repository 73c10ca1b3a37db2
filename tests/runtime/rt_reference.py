"""A plain-Python constrained beam search (one hypothesis at a time, host-side automata): the
oracle for the vectorized search with narrow beams, where DBA's candidates and banks matter."""
from __future__ import annotations

import math
from collections import deque

from fstbeam.runtime.search.dba import bank_sizes

INF = 1 << 30


def _dist_light(a, V):
    n = len(a.final)
    rev = [[] for _ in range(n)]
    for s in range(n):
        for t in range(V):
            nx = a.next_state(s, t)
            if nx >= 0:
                rev[nx].append(s)
    d = [INF] * n
    q = deque(i for i in range(n) if a.final[i])
    for i in q:
        d[i] = 0
    while q:
        x = q.popleft()
        for p in rev[x]:
            if d[p] == INF:
                d[p] = d[x] + 1
                q.append(p)
    return d


def _ends(lit: bytes) -> list[int]:
    isw = [(chr(b).isascii() and chr(b).isalnum()) or b >= 0x80 for b in lit]
    m = len(lit)
    return [e for e in range(1, m + 1) if isw[e - 1] and (e == m or not isw[e])] or [m]


def _units(a) -> list[int]:
    """Byte progress at which each word unit of phrase ``a`` is complete: a word once its last
    byte is matched (the last one: the phrase). AnyOf / ordered automata: item after item, a
    one-spelling item by its words, a several-spelling item as one unit when met (progress: bytes
    of the met items at their longest spelling)."""
    if not getattr(a, "items", ""):
        return _ends(a.literal)
    import json

    units, base = [], 0
    for alts in json.loads(a.items)["items"]:
        lits = [t.encode() for t in alts]
        units += [base + e for e in (_ends(lits[0])[:-1] if len(lits) == 1 else [])]
        base += max(map(len, lits))
        units.append(base)
    return units


def _words_done(a):
    """Words of phrase ``a`` complete in each state (plain Python)."""
    units = _units(a)
    return [sum(p >= u for u in units) for p in map(int, a.progress)]


def _banks(a):
    """DBA bank share of each state of phrase ``a``: the words it has begun (a byte matched)."""
    units = _units(a)
    return [sum(p > start for start in [0] + units[:-1]) for p in map(int, a.progress)]


class Hyp:
    __slots__ = ("tokens", "score", "h", "ls", "plain", "cons", "over")

    def __init__(self, tokens, score, h, ls, plain=False, cons=True, over=False):
        self.tokens, self.score, self.h, self.ls = tokens, score, h, ls
        self.plain, self.cons, self.over = plain, cons, over


def reference_search(logprobs, prompt, cc, *, V, eos, k, L, dba=True, nbest=1, plain_track=True, vocab=None):
    """Returns (best list of (logprob, tokens, eos or None), steps).

    With phrases, ``dba`` and ``plain_track`` (the decoder's defaults, runtime/search/tracks.py), the
    beam is the union of two selections: DBA's (over candidates from every hypothesis; a
    hypothesis that could have ended but for an unmet phrase, and its descendants, are taken only
    for places left empty, and only with tokens that bring an unmet phrase closer) and the plain
    track's (the beam search without the must-include
    phrases, over its own members); every finished output meeting all constraints enters the pool."""
    hard = cc.hard if cc is not None else None
    lights = list(cc.light) if cc is not None else []
    nphr = len(cc.phrases) if cc is not None else 0
    ldist = [_dist_light(a, V) for a in lights]
    vb = cc.vocab if cc is not None else vocab  # no vocab: every id is text
    text = [t for t in range(V) if vb is None or vb.token_bytes[t]]
    two = bool(dba and nphr and plain_track)

    def lead(t):  # the token's first byte is not a word byte
        b = vb.token_bytes[t]
        return bool(b) and not (chr(b[0]).isascii() and chr(b[0]).isalnum()) and b[0] < 0x80

    def ends_in_word(t):  # the token's last byte is a word byte
        b = vb.token_bytes[t] if vb is not None and 0 <= t < len(vb.token_bytes) else None
        return bool(b) and (b[-1] >= 0x80 or chr(b[-1]).isalnum())

    def allowed(h, ls):
        out = []
        for t in text:
            if t in eos:
                continue
            if hard is not None and hard.next_state(h, t) < 0:
                continue
            if all(a.next_state(s, t) >= 0 for a, s in zip(lights, ls)):
                out.append(t)
        return out

    def nxt(h, ls, t):
        return (hard.next_state(h, t) if hard is not None else 0), tuple(a.next_state(s, t) for a, s in zip(lights, ls))

    def accepting(h, ls, phrases=True):
        return (hard is None or bool(hard.final[h])) and all(
            bool(a.final[s]) for i, (a, s) in enumerate(zip(lights, ls)) if phrases or i >= nphr)

    def dists(h, ls, phrases=True):
        d = int(hard.dist_to_final[h]) if hard is not None else 0
        ds = [dd[s] for i, (dd, s) in enumerate(zip(ldist, ls)) if phrases or i >= nphr]
        return max([d] + ds), max(d, sum(ds))  # lower bound; need (as if no token advanced two at once)

    def tier(t, h, ls, phrases=True):
        lo, need = dists(h, ls, phrases)
        return int(t + 1 + lo <= L) + int(t + 1 + need <= L)

    # banks count begun phrase words, from the words of the literal (not the runtime tables)
    wprog = [_words_done(a) for a in lights[:nphr]]
    bprog = [_banks(a) for a in lights[:nphr]]

    def bank(c):
        """Words begun; a token that starts a begun word again (a leading space or punctuation
        mid-word) is no progress."""
        par = beam[c["j"]].ls
        return sum(w[s] + int(b[s] > w[s] and not (b[p] > w[p] and lead(c["v"])))
                   for w, b, s, p in zip(wprog, bprog, c["ls"][:nphr], par[:nphr]))

    nbanks = 1 + sum(max(w) for w in wprog)

    def pick(cands, k, banked):
        """Post & Vilar's allocation (or the best k) over the best-tier candidates; demoted
        (``over``) ones only for places left empty."""
        if not cands:
            return []
        best = max(c["tier"] for c in cands)
        feas = sorted((c for c in cands if c["tier"] == best), key=lambda c: -c["s"])
        if not (banked and best > 0):
            return feas[:k]
        first = [c for c in feas if not c["over"]]
        counts = [0] * nbanks
        for c in first:
            counts[bank(c)] += 1
        alloc = bank_sizes(nbanks - 1, k, counts)
        sel = []
        for c in first:
            b = bank(c)
            if alloc[b] > 0:
                sel.append(c)
                alloc[b] -= 1
        for group in (first, feas):
            rest = [c for c in group if c not in sel]
            sel += rest[: max(0, k - len(sel))]
        return sel

    beam = [Hyp([], 0.0, hard.start if hard is not None else 0, tuple(a.start for a in lights), plain=two)]
    pool = []  # (logprob, tokens, eos)
    pl_best = -math.inf
    steps = 0
    for t in range(L):
        steps += 1
        cands = {}  # (parent, token) -> candidate

        def add(sc, j, v, flag):
            c = cands.setdefault((j, v), dict(s=sc, j=j, v=v, cons=False, plain=False))
            c[flag] = True

        per_row, ranked = [], []
        for j, hyp in enumerate(beam):
            lp = logprobs(prompt + hyp.tokens)
            e = max(eos, key=lambda e: lp[e].item())
            acc, acc_plain = accepting(hyp.h, hyp.ls), accepting(hyp.h, hyp.ls, phrases=False)
            if acc:
                pool.append((hyp.score + lp[e].item(), hyp.tokens, e))
            if hyp.plain and acc_plain:
                pl_best = max(pl_best, hyp.score + lp[e].item())
            al = allowed(hyp.h, hyp.ls)
            row = sorted(((hyp.score + lp[v].item(), j, v) for v in al), key=lambda c: (-c[0], c[2]))[:k]
            best_text = row[0][0] - hyp.score if row else -math.inf
            hyp.over = hyp.over or (two and lp[e].item() >= best_text and acc_plain and not acc)
            per_row.append((row, lp, al))
            if hyp.cons:  # DBA's global top-k and row bests: its own members only
                ranked += row
            if hyp.plain:
                for c in row:
                    add(*c, "plain")
        if dba and nphr:
            ranked.sort(key=lambda c: -c[0])
            chosen = list(ranked[:k])
            for j, (row, lp, al) in enumerate(per_row):
                hyp = beam[j]
                if row and hyp.cons:
                    chosen.append(row[0])
                for a, w, s, dd in zip(lights[:nphr], wprog, hyp.ls[:nphr], ldist):
                    if a.final[s]:
                        continue
                    adv = [v for v in a.advancing(s).tolist() if v in set(al)]
                    done = [v for v in adv if w[a.next_state(s, v)] > w[s]]  # completes a word
                    short = [v for v in adv if v not in done and dd[a.next_state(s, v)] + 1 == dd[s]]
                    every_short = [v for v in a.advancing(s).tolist() if w[a.next_state(s, v)] <= w[s]
                                   and dd[a.next_state(s, v)] + 1 == dd[s]]
                    # a partial advance only where no word-completing token is allowed (or where
                    # the model prefers it and it starts differently: a space or not); the
                    # shortest-path ones where the automaton has any (allowed or not)
                    part = short if every_short else [v for v in adv if v not in done]
                    best = lambda g: max(g, key=lambda v: (lp[v].item(), -v)) if g else None  # noqa: E731
                    vd, vp = best(done), best(part)
                    # ... but not in the middle of a word, where a leading space starts it again
                    mid = bool(hyp.tokens or prompt) and ends_in_word((hyp.tokens or prompt)[-1])
                    if vd is not None and vp is not None and lead(vd) != lead(vp) and lp[vp].item() > lp[vd].item() \
                            and not (mid and lead(vp)):
                        vd = None
                    v = vd if vd is not None else vp
                    if v is not None:
                        chosen.append((hyp.score + lp[v].item(), j, v))
        else:
            chosen = ranked
        for c in chosen:
            add(*c, "cons")
        for c in cands.values():
            c["h"], c["ls"] = nxt(beam[c["j"]].h, beam[c["j"]].ls, c["v"])
            c["over"] = beam[c["j"]].over
            # a closed answer only moves towards its unmet phrases: a light distance must fall
            c["stall"] = c["over"] and not any(dd[s] < dd[s0] for dd, s, s0 in zip(ldist, c["ls"], beam[c["j"]].ls))
        cons = [dict(c, tier=tier(t, c["h"], c["ls"])) for c in cands.values() if c["cons"] and not c["stall"]]
        plain = [dict(c, tier=tier(t, c["h"], c["ls"], phrases=False)) for c in cands.values() if c["plain"]]
        in_cons = {(c["j"], c["v"]) for c in pick(cons, k, bool(dba and nphr))}
        in_plain = {(c["j"], c["v"]) for c in pick(plain, k, False)}
        sel = sorted((c for c in cands.values() if (c["j"], c["v"]) in in_cons | in_plain), key=lambda c: -c["s"])
        new = [Hyp(beam[c["j"]].tokens + [c["v"]], c["s"], c["h"], c["ls"], plain=(c["j"], c["v"]) in in_plain,
                   cons=(c["j"], c["v"]) in in_cons, over=c["over"]) for c in sel]
        if t + 1 == L:
            for hyp in new:
                if accepting(hyp.h, hyp.ls):
                    pool.append((hyp.score, hyp.tokens, None))
            break
        beam = new
        pool.sort(key=lambda p: -p[0])
        plain_live = [h for h in beam if h.plain and t + 1 + dists(h.h, h.ls)[0] <= L]  # can still meet every phrase
        settled = max(pl_best, pool[0][0] if pool else -math.inf)
        if not plain_live or max(h.score for h in plain_live) <= settled:  # the plain track ends
            beam = [h for h in beam if h.cons]
            for h in beam:
                h.plain = False
        live_ub = max((h.score for h in beam if t + 1 + dists(h.h, h.ls)[0] <= L), default=-math.inf)
        if not beam or (len(pool) >= nbest and pool[nbest - 1][0] >= live_ub):
            break
    pool.sort(key=lambda p: -p[0])
    return pool[:nbest], steps
