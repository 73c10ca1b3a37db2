"""A plain-Python constrained beam search (one hypothesis at a time, host-side automata): the
oracle for the vectorized search with narrow beams, where DBA's candidates and banks matter."""
from __future__ import annotations

import math
from collections import deque

from fstbeam.runtime.dba import bank_sizes

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


def _words_done(a):
    """Words of phrase ``a`` complete in each state: a word counts once its last byte is
    matched, the last one when the phrase is matched (plain Python). AnyOf /
    ordered automata: item after item, a one-spelling item by its words, a several-spelling item
    as one word when met (progress: bytes of the met items at their longest spelling)."""
    prog = [int(x) for x in a.progress]
    if not getattr(a, "items", ""):
        m = len(a.literal)
        return [sum((p >= e) if e < m else (p == m) for e in _ends(a.literal)) for p in prog]
    import json

    units, base = [], 0  # (byte progress completing the unit)
    for alts in json.loads(a.items)["items"]:
        lits = [t.encode() for t in alts]
        inner = _ends(lits[0])[:-1] if len(lits) == 1 else []
        units += [base + e for e in inner]
        base += max(map(len, lits))
        units.append(base)
    return [sum(p >= u for u in units) for p in prog]


class Hyp:
    __slots__ = ("tokens", "score", "h", "ls")

    def __init__(self, tokens, score, h, ls):
        self.tokens, self.score, self.h, self.ls = tokens, score, h, ls


def reference_search(logprobs, prompt, cc, *, V, eos, k, L, dba=True, nbest=1):
    """Returns (best list of (logprob, tokens, eos or None), steps)."""
    hard = cc.hard if cc is not None else None
    lights = list(cc.light) if cc is not None else []
    nphr = len(cc.phrases) if cc is not None else 0
    ldist = [_dist_light(a, V) for a in lights]
    text = [t for t in range(V) if cc is None or cc.vocab.token_bytes[t]]

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

    def accepting(h, ls):
        return (hard is None or bool(hard.final[h])) and all(bool(a.final[s]) for a, s in zip(lights, ls))

    def lb(h, ls):
        d = int(hard.dist_to_final[h]) if hard is not None else 0
        for dd, s in zip(ldist, ls):
            d = max(d, dd[s])
        return d

    def need(h, ls):  # as if no token advanced two light automata at once
        d = int(hard.dist_to_final[h]) if hard is not None else 0
        return max(d, sum(dd[s] for dd, s in zip(ldist, ls)))

    # banks count completed phrase words, from the words of the literal (not the runtime tables)
    wprog = [_words_done(a) for a in lights[:nphr]]

    def bank(ls):
        return sum(w[s] for w, s in zip(wprog, ls[:nphr]))

    nbanks = 1 + sum(max(w) for w in wprog)
    beam = [Hyp([], 0.0, hard.start if hard is not None else 0, tuple(a.start for a in lights))]
    pool = []  # (logprob, tokens, eos)
    steps = 0
    for t in range(L):
        steps += 1
        cands = []  # (score, parent index, token)
        per_row = []
        for j, hyp in enumerate(beam):
            lp = logprobs(prompt + hyp.tokens)
            if accepting(hyp.h, hyp.ls):
                e = max(eos, key=lambda e: lp[e].item())
                pool.append((hyp.score + lp[e].item(), hyp.tokens, e))
            al = allowed(hyp.h, hyp.ls)
            row = sorted(((hyp.score + lp[v].item(), j, v) for v in al), key=lambda c: (-c[0], c[2]))[:k]
            per_row.append((row, lp, al))
            cands += row
        if dba and nphr:
            cands.sort(key=lambda c: -c[0])
            chosen = list(cands[:k])
            for j, (row, lp, al) in enumerate(per_row):
                if row:
                    chosen.append(row[0])
                hyp = beam[j]
                for a, w, s, dd in zip(lights[:nphr], wprog, hyp.ls[:nphr], ldist):
                    if a.final[s]:
                        continue
                    adv = [v for v in a.advancing(s).tolist() if v in set(al)]
                    done = [v for v in adv if w[a.next_state(s, v)] > w[s]]  # completes a word
                    short = [v for v in adv if v not in done and dd[a.next_state(s, v)] + 1 == dd[s]]
                    every_short = [v for v in a.advancing(s).tolist() if w[a.next_state(s, v)] <= w[s]
                                   and dd[a.next_state(s, v)] + 1 == dd[s]]
                    # a partial advance only where no word-completing token is allowed; the
                    # shortest-path ones where the automaton has any (allowed or not)
                    group = done or (short if every_short else adv)
                    if group:
                        v = max(group, key=lambda v: (lp[v].item(), -v))
                        chosen.append((hyp.score + lp[v].item(), j, v))
            seen, cands = set(), []
            for c in chosen:
                if (c[1], c[2]) not in seen:
                    seen.add((c[1], c[2]))
                    cands.append(c)
        info = []
        for sc, j, v in cands:
            h2, ls2 = nxt(beam[j].h, beam[j].ls, v)
            info.append((sc, j, v, h2, ls2, int(t + 1 + lb(h2, ls2) <= L) + int(t + 1 + need(h2, ls2) <= L)))
        tier = max((c[5] for c in info), default=0)
        feas = [c for c in info if c[5] == tier]  # the best tier only (all of them if none fits)
        feas.sort(key=lambda c: -c[0])
        if dba and nphr and tier > 0:
            counts = [0] * nbanks
            for c in feas:
                counts[bank(c[4])] += 1
            alloc = bank_sizes(nbanks - 1, k, counts)
            sel = []
            for c in feas:
                b = bank(c[4])
                if alloc[b] > 0:
                    sel.append(c)
                    alloc[b] -= 1
            rest = [c for c in feas if c not in sel]
            sel += rest[: max(0, k - len(sel))]
        else:
            sel = feas[:k]
        sel.sort(key=lambda c: -c[0])
        new = [Hyp(beam[c[1]].tokens + [c[2]], c[0], c[3], c[4]) for c in sel]
        if t + 1 == L:
            for hyp in new:
                if accepting(hyp.h, hyp.ls):
                    pool.append((hyp.score, hyp.tokens, None))
            break
        beam = new
        pool.sort(key=lambda p: -p[0])
        live_ub = max((h.score for h in beam if t + 1 + lb(h.h, h.ls) <= L), default=-math.inf)
        if not beam or (len(pool) >= nbest and pool[nbest - 1][0] >= live_ub):
            break
    pool.sort(key=lambda p: -p[0])
    return pool[:nbest], steps
