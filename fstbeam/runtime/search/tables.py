"""Compiled tables on the decoder's device, pooled across the inputs of a batch.

Every input of a batch may bring its own constraints (its own word list, phrases, prefix, avoid
list). The search step stays one vectorized program by *pooling*: the hard automata of the batch
are concatenated into one state space (each table's state, block and dense-row ids shifted by an
offset; the sorted keys of docs/tables.md stay sorted under the shift), and so are the light
automata. A hypothesis then carries one global hard state and ``P`` global light states.

Two pseudo hard states come first: ``FREE`` (state 0: every id but EOS, for inputs without
constraints, so unconstrained decoding is plain beam search) and ``TEXT`` (state 1: every text
token, for inputs with light constraints only). Light state 0 is the *identity* automaton that
pads inputs with fewer light automata: it allows everything (special tokens included) and is final.

Operations (all vectorized, no per-hypothesis Python):

- :meth:`Tables.build_mask`: the allowed-token bitmask ``[R, W]`` of each hypothesis: the hard
  state's dense row, plus its sparse tokens, AND the class mask of the light states (the AND of
  class sets is one row per hypothesis, whatever the number of automata), then the exception tokens
  of the light states recomputed exactly (scatter set/clear of distinct bits);
- :meth:`Tables.hard_next` / :meth:`Tables.light_next`: next states of chosen tokens (two
  ``searchsorted`` for the hard automaton, one for the light ones);
- :meth:`Tables.accepting`, :meth:`Tables.lower_bound`, :meth:`Tables.bank`, :meth:`Tables.met`:
  EOS allowed, fewest tokens to an accepting state, DBA bank, per-phrase met flags.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ...contract.bitmask import bitmask_width, pack_ids  # re-exported: the one bit-packing helper
from ...contract.layout import BYTE_KEYS, INF_DIST, NO_TEXT_CLASS, light_order, starts_nonword
from ...contract.light import light_distances  # noqa: F401  re-exported (distances come with the tables)
from ...contract.progress import bank_progress, completing_first, word_progress
from ...kernels.bitmask import or_bits_torch
from ..identity import IdentityCache, identity_key
from .table_lookups import FallbackPool, advance_sets, hard_next

__all__ = ["INF_DIST", "InputConstraints", "Tables", "light_distances", "pack_ids", "bitmask_width"]

_KEY_SENTINEL = np.iinfo(np.int64).max
FREE, TEXT = 0, 1
_COMBO_CACHE: dict = {}


def _class_combos(token_class: np.ndarray, V: int, eos_ids: tuple[int, ...]) -> np.ndarray:
    """int32 ``[32, W]``: for each set of classes (bit c = class c; class 4 = ids without text,
    EOS excluded), the mask of their tokens. Cached per token-class array (one per tokenizer)."""
    key = (identity_key(token_class), V, eos_ids)
    hit = _COMBO_CACHE.get(key)
    if hit is not None:
        return hit
    tc = np.asarray(token_class).astype(np.int64)
    eos = np.asarray(eos_ids, np.int64)
    rows = []
    for c in range(5):
        ids = np.flatnonzero(tc == c)
        if c == NO_TEXT_CLASS and eos.size:
            ids = np.setdiff1d(ids, eos)
        rows.append(pack_ids(ids, V))
    combos = np.zeros((32, bitmask_width(V)), np.int32)
    for code in range(32):
        for c in range(5):
            if code >> c & 1:
                combos[code] |= rows[c]
    if len(_COMBO_CACHE) > 8:
        _COMBO_CACHE.clear()
    _COMBO_CACHE[key] = combos
    return combos


@dataclass(frozen=True, eq=False)
class InputConstraints:
    """The constraints of one input, as the pool sees them. ``hard`` is a ``HardTables`` (or
    ``None``); ``lights`` are ``LightAutomaton`` objects, the ``n_phrases`` must-include phrases
    first, then avoid phrases, then the prefix; ``constrained=False`` means plain decoding (the
    FREE state: special tokens allowed too); ``output_check``: see `.pool.checked_tiers`."""

    hard: Any = None
    lights: tuple = ()
    n_phrases: int = 0
    constrained: bool = True
    text_ids: np.ndarray | None = field(default=None, repr=False)
    source: Any = field(default=None, repr=False)
    #: (output ids, bytes a stop string cut) -> passes, or None
    output_check: Callable[[list[int], int], bool] | None = field(default=None, repr=False)

    @classmethod
    def from_compiled(cls, cc) -> "InputConstraints":
        if cc is None:
            return cls(constrained=False)
        lights = light_order(cc.phrases, cc.avoid, cc.prefix)
        return cls(cc.hard, lights, len(cc.phrases), True, cc.vocab.text_ids, cc)

    @property
    def phrase_texts(self) -> tuple[str, ...]:
        return tuple(a.text for a in self.lights[: self.n_phrases])


def _t(a, device, dtype=None) -> torch.Tensor:
    t = torch.as_tensor(np.ascontiguousarray(a))
    if dtype is not None:
        t = t.to(dtype)
    return t.to(device)


def _sentinel(a: np.ndarray) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.int64), np.array([_KEY_SENTINEL], dtype=np.int64)])


class Tables:
    """Pooled device tables for one set of inputs (see the module docstring).

    ``hard_start(inp)`` / ``light_starts(inp)`` give an input's start states in the pool.
    """

    def __init__(
        self,
        inputs: Sequence[InputConstraints],
        *,
        vocab_width: int,
        eos_ids: Sequence[int],
        device: torch.device | str = "cpu",
    ):
        self.V = V = int(vocab_width)
        self.W = bitmask_width(V)
        self.device = torch.device(device)
        self.eos_ids = tuple(int(e) for e in eos_ids)
        self.inputs = list(inputs)
        self._build_hard()
        self._build_light()

    # ---- building --------------------------------------------------------------------------
    def _build_hard(self) -> None:
        V, W, dev = self.V, self.W, self.device
        hards: list = []
        for inp in self.inputs:
            if inp.hard is not None and all(h is not inp.hard for h in hards):
                if int(inp.hard.width) != V:
                    from ...errors import TokenizerMismatchError

                    raise TokenizerMismatchError(
                        f"the constraints were compiled for {inp.hard.width} token ids but the model "
                        f"produces {V} logits: compile them with this model's tokenizer"
                    )
                hards.append(inp.hard)
        free = np.full(W, -1, dtype=np.int32)
        if V % 32:
            free[-1] = np.int32(np.uint32((1 << (V % 32)) - 1).view(np.int32))
        eos = np.asarray(self.eos_ids, dtype=np.int64)
        if eos.size:
            free &= ~pack_ids(eos, V)
        text_ids = next((inp.text_ids for inp in self.inputs if inp.constrained and inp.text_ids is not None), None)
        if text_ids is None:
            text_ids = next((np.flatnonzero(np.asarray(h.token_first_byte) >= 0) for h in hards), np.zeros(0, np.int64))
        text = pack_ids(text_ids, V)
        final, dist, trivial = [np.array([True, True])], [np.array([0, 0])], [np.array([True, True])]
        sb_key, sb_id, blk_key, blk_next, sb_off, sb_exit = [], [], [], [], [], []
        dense, dense_row = [np.stack([free, text])], [np.array([0, 1])]
        sp_ptr, sp_tok = [np.zeros(3, dtype=np.int64)], []
        s_off, b_off, d_off, t_off = 2, 0, 2, 0
        self._hard_offset: IdentityCache[int] = IdentityCache()  # hard automaton -> its first state
        self._hard_start: IdentityCache[int] = IdentityCache()
        first_byte = None
        for h in hards:
            S = int(h.final.shape[0])
            nb = int(np.asarray(h.block_ptr).shape[0]) - 1
            self._hard_offset[h] = s_off
            self._hard_start[h] = s_off + int(h.start)
            final.append(np.asarray(h.final, bool))
            d = np.asarray(h.dist_to_final, np.int64)
            dist.append(np.where((d < 0) | (d >= INF_DIST), INF_DIST, d))
            trivial.append(np.zeros(S, bool))
            sb_key.append(np.asarray(h.state_block_key, np.int64) + s_off * BYTE_KEYS)
            sb_id.append(np.asarray(h.state_block_id, np.int64) + b_off)
            # shared interiors: next = (block_next + s_off) + offset
            sb_off.append(np.asarray(h.state_block_offset, np.int64))
            ex = np.asarray(h.state_block_exit, np.int64)
            sb_exit.append(np.where(ex >= 0, ex + b_off, -1))
            blk_key.append(np.asarray(h.block_key, np.int64) + b_off * V)
            blk_next.append(np.asarray(h.block_next, np.int64) + s_off)
            dm = np.asarray(h.dense_masks, np.int32)
            dense.append(dm)
            dense_row.append(np.asarray(h.state_dense_row, np.int64) + d_off)
            ptr = np.asarray(h.state_sparse_ptr, np.int64)
            sp_ptr.append(ptr[1:] + t_off)
            sp_tok.append(np.asarray(h.state_sparse_tokens, np.int64))
            s_off, b_off, d_off, t_off = s_off + S, b_off + nb, d_off + dm.shape[0], t_off + int(ptr[-1])
            if first_byte is None:
                first_byte = np.asarray(h.token_first_byte, np.int64)
        self.n_hard_states = s_off
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        self.h_final = _t(cat(final, bool), dev)
        self.h_dist = _t(cat(dist, np.int64), dev)
        self.h_trivial = _t(cat(trivial, bool), dev)
        self.h_sb_key = _t(_sentinel(cat(sb_key, np.int64)), dev)
        self.h_sb_id = _t(np.concatenate([cat(sb_id, np.int64), [0]]), dev)
        self.h_blk_key = _t(_sentinel(cat(blk_key, np.int64)), dev)
        self.h_blk_next = _t(np.concatenate([cat(blk_next, np.int64), [-1]]), dev)
        off_all, exit_all = cat(sb_off, np.int64), cat(sb_exit, np.int64)
        self.h_shared = bool(off_all.any() or (exit_all >= 0).any())  # else two searchsorted per lookup
        if self.h_shared:
            self.h_sb_off = _t(np.concatenate([off_all, [0]]), dev)
            self.h_sb_exit = _t(np.concatenate([exit_all, [-1]]), dev)
        self.h_dense = _t(np.concatenate(dense, axis=0).astype(np.int32), dev)
        self.h_dense_row = _t(cat(dense_row, np.int64), dev)
        self.h_sp_ptr = _t(cat(sp_ptr, np.int64), dev)
        self.h_sp_tok = _t(cat(sp_tok, np.int64), dev)
        self.h_first_byte = _t(first_byte if first_byte is not None else np.full(V, -1, np.int64), dev)
        self.has_hard = bool(hards)
        # EOS ids of this decode that are text tokens for the tables (e.g. newline tokens used to
        # stop at a line end): they end an output and are never emitted as text, so every mask
        # row clears them.
        eos_arr = np.asarray([e for e in self.eos_ids if 0 <= e < V], np.int64)
        text_eos = eos_arr[np.isin(eos_arr, np.asarray(text_ids, np.int64))].tolist() if eos_arr.size else []
        if first_byte is not None and eos_arr.size:
            text_eos = sorted(set(text_eos) | set(eos_arr[first_byte[eos_arr] >= 0].tolist()))
        self.eos_clear = _t(~pack_ids(np.asarray(text_eos, np.int64), V), dev)[None, :] if text_eos else None

    def _build_light(self) -> None:
        V, dev = self.V, self.device
        autos: list = []
        for inp in self.inputs:
            for a in inp.lights:
                if all(a is not b for b in autos):
                    autos.append(a)
        self.P = max((len(inp.lights) for inp in self.inputs), default=0)
        self.P_phr = max((inp.n_phrases for inp in self.inputs), default=0)
        tc_source = next((a.token_class for a in autos if a.token_class is not None), None)
        if autos and tc_source is None:
            raise ValueError("light automata without a token_class table: compile them with fstbeam.compile_constraints")
        token_class = np.full(V, NO_TEXT_CLASS, np.int64) if tc_source is None else np.asarray(tc_source).astype(np.int64)
        self.token_class = _t(token_class, dev)
        # State 0: identity. Columns 0..3 text classes, 4 = no-text ids.
        final, prog, dnext = [np.array([True])], [np.array([0])], [np.zeros((1, 5), np.int64)]
        begun = [np.array([False])]  # part-way into a word of a phrase (its bank counts the word)
        is_phr, dist = [np.array([False])], [np.array([0])]
        ekey, enext, aptr, atok = [], [], [np.zeros(2, np.int64)], []  # adv pointers: identity = empty range
        fallbacks = FallbackPool(dev)  # fallback states (docs/tables.md)
        asplit = [np.zeros(1, np.int64)]  # per state: where its word-completing advancing tokens end
        aend = [np.zeros(1, np.int64)]  # ... and where the other advancing tokens DBA may offer end
        off, a_off = 1, 0
        self._light_offset: IdentityCache[int] = IdentityCache()
        for a in autos:
            n = int(a.final.shape[0])
            self._light_offset[a] = off
            final.append(np.asarray(a.final, bool))
            is_phrase = a.kind == "phrase"
            wprog = word_progress(a) if is_phrase else np.zeros(n, np.int64)
            prog.append(wprog)
            begun.append(bank_progress(a) > wprog if is_phrase else np.zeros(n, bool))
            dn = np.asarray(a.default_next, np.int64)
            dn5 = np.full((n, 5), -1, np.int64)
            dn5[:, : dn.shape[1]] = np.where(dn >= 0, dn + off, -1)
            dnext.append(dn5)
            is_phr.append(np.full(n, is_phrase))
            dist.append(np.asarray(a.dist, np.int64))  # computed by the compiler (contract.light)
            ek = np.asarray(a.exc_key, np.int64)
            ekey.append(ek + off * V)
            en = np.asarray(a.exc_next, np.int64)
            enext.append(np.where(en >= 0, en + off, -1))
            ap = np.asarray(a.adv_ptr, np.int64)
            aptr.append(ap[1:] + a_off)
            short = fallbacks.add(a, off, wprog if is_phrase else None)
            if is_phrase:
                toks, ncomp, nother = completing_first(a, wprog, short)
            else:
                toks, ncomp, nother = np.asarray(a.adv_tokens, np.int64), np.zeros(n, np.int64), np.diff(ap)
            atok.append(toks)
            asplit.append(ap[:-1] + ncomp + a_off)
            aend.append(ap[:-1] + ncomp + nother + a_off)
            off, a_off = off + n, a_off + int(ap[-1])
        self.n_light_states = off
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        aptr_all = np.concatenate(aptr).astype(np.int64)  # [0, 0] for the identity, then each automaton's
        dn_all = np.concatenate(dnext, axis=0)
        l_final = cat(final, bool)
        self.l_final = _t(l_final, dev)
        self.l_bank = _t(cat(prog, np.int64), dev)
        self.l_begun = _t(cat(begun, bool), dev)
        self.l_is_phrase = _t(cat(is_phr, bool), dev)
        self.l_dist = _t(cat(dist, np.int64), dev)
        self.l_next = _t(dn_all, dev)
        code = ((dn_all >= 0) * (1 << np.arange(5))).sum(1)
        self.l_code = _t(code.astype(np.int64), dev)
        ek_all = cat(ekey, np.int64)
        self.l_exc_key = _t(_sentinel(ek_all), dev)
        self.l_exc_next = _t(np.concatenate([cat(enext, np.int64), [-1]]), dev)
        self.l_exc_ptr = _t(np.searchsorted(ek_all, np.arange(off + 1, dtype=np.int64) * V).astype(np.int64), dev)
        self.l_fallback = fallbacks if fallbacks.finish() else None
        self.l_adv_ptr = _t(aptr_all, dev)
        self.l_adv_split = _t(np.concatenate(asplit).astype(np.int64), dev)
        self.l_adv_end = _t(np.concatenate(aend).astype(np.int64), dev)
        self.l_adv_tok = _t(cat(atok, np.int64), dev)
        # 32 class combinations (bit c = class c allowed; class 4 = ids without text, EOS excluded).
        self.l_combo = _t(_class_combos(tc_source, V, self.eos_ids), dev) if autos and tc_source is not None else None

    # ---- per-input offsets -------------------------------------------------------------------
    def contains(self, inp: InputConstraints) -> bool:
        """Every automaton of ``inp`` is in the pool."""
        if inp.hard is not None and inp.hard not in self._hard_offset:
            return False
        return all(a in self._light_offset for a in inp.lights)

    def hard_start(self, inp: InputConstraints) -> int:
        if not inp.constrained:
            return FREE
        if inp.hard is None:
            return TEXT
        return self._hard_start[inp.hard]

    def hard_offset(self, inp: InputConstraints) -> int:
        return self._hard_offset[inp.hard] if inp.hard is not None else 0

    def light_starts(self, inp: InputConstraints, P: int | None = None) -> list[int]:
        P = self.P if P is None else P
        out = [self._light_offset[a] + int(a.start) for a in inp.lights]
        return out + [0] * (P - len(out))

    def light_offsets(self, inp: InputConstraints, P: int | None = None) -> list[int]:
        P = self.P if P is None else P
        out = [self._light_offset[a] for a in inp.lights]
        return out + [0] * (P - len(out))

    # ---- lookups -----------------------------------------------------------------------------
    def hard_next(self, h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Next hard state for text tokens ``t`` in states ``h`` (same shape); -1 = disallowed."""
        return hard_next(self, h, t) if self.has_hard else h.clone()

    def light_next(self, s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Next light states ``[..., P]`` for tokens ``t [...]`` from states ``s [..., P]``."""
        if s.shape[-1] == 0:
            return s.clone()
        tt = t.clamp(min=0).unsqueeze(-1).expand_as(s)
        key = s * self.V + tt
        i = torch.searchsorted(self.l_exc_key, key.reshape(-1)).reshape(key.shape)
        hit = self.l_exc_key[i] == key
        cls = self.token_class[tt]
        dflt = self.l_next[s, cls]
        if self.l_fallback is not None:  # missed: the fallback's exception, if any
            dflt = self.l_fallback.next_state(self.l_exc_key, self.l_exc_next, self.V, s, tt, dflt)
        return torch.where(hit, self.l_exc_next[i], dflt)

    def accepting(self, h: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """EOS allowed: hard final and every light automaton final."""
        ok = self.h_final[h]
        if s.shape[-1]:
            ok = ok & self.l_final[s].all(-1)
        return ok

    def lower_bound(self, h: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """Fewest more text tokens before EOS is allowed (``INF_DIST`` if never)."""
        d = self.h_dist[h]
        if s.shape[-1]:
            d = torch.maximum(d, self.l_dist[s].max(-1).values)
        return d

    def bounds(self, h: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(:meth:`lower_bound`, *need*) from one gather of the distances. *Need*: the tokens still
        needed if no token advances two light automata at once, the sum of their distances. Not
        a bound ("New" and "New York" share tokens), so the search only *prefers* candidates that
        fit by it (:func:`~.step.select`)."""
        d = self.h_dist[h]
        if not s.shape[-1]:
            return d, d
        ld = self.l_dist[s]
        return torch.maximum(d, ld.max(-1).values), torch.maximum(d, ld.sum(-1).clamp(max=INF_DIST))

    def bank(self, s: torch.Tensor, parent: torch.Tensor | None = None, tok: torch.Tensor | None = None) -> torch.Tensor:
        """DBA bank: words of must-include phrases begun, complete or part-way, summed over the
        phrases (:func:`fstbeam.contract.progress.bank_progress`). With the ``parent``'s light
        states and the token ``tok`` that led here: a token that starts a begun word again, with
        a leading space or punctuation in the middle of it (" B" + " Be" for "Beleg"), begins
        nothing (it keeps the bank of the words complete)."""
        if s.shape[-1] == 0:
            return torch.zeros(s.shape[:-1], dtype=torch.int64, device=s.device)
        begun = self.l_begun[s]
        if parent is not None and tok is not None:
            lead = starts_nonword(self.token_class[tok.clamp(min=0)])
            begun = begun & ~(self.l_begun[parent] & lead[..., None])
        return (self.l_bank[s] + begun.to(torch.int64)).sum(-1)

    def met(self, s: torch.Tensor) -> torch.Tensor:
        """Per light slot: a must-include phrase that is met (False for other slots)."""
        return self.l_final[s] & self.l_is_phrase[s]

    def unmet_phrase(self, s: torch.Tensor) -> torch.Tensor:
        return self.l_is_phrase[s] & ~self.l_final[s]

    def advance_sets(self, s: torch.Tensor) -> torch.Tensor:
        """``[R, 2P, C]`` token ids that raise the progress of each unmet phrase (-1 pad): for
        phrase p, set p holds the tokens that complete a word of it, set P + p the others on a
        shortest path to the phrase's end (all others where none is; ``completing_first``)."""
        return advance_sets(self, s)

    # ---- the mask --------------------------------------------------------------------------
    def build_mask(self, h: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """int32 ``[R, W]``: the allowed text tokens of each hypothesis (EOS never set)."""
        m = self._build_mask(h, s)
        if self.eos_clear is not None:
            m &= self.eos_clear
        return m

    def _build_mask(self, h: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        m = self.h_dense.index_select(0, self.h_dense_row[h])  # [R, W]
        if self.has_hard:
            lo = self.h_sp_ptr[h]
            cnt = self.h_sp_ptr[h + 1] - lo
            rows, idx = _expand_ranges(lo, cnt)
            if rows.numel():
                or_bits_torch(m, rows, self.h_sp_tok[idx], set_=True)
        if s.shape[-1] == 0 or self.l_combo is None:
            return m
        R, P = s.shape
        # Exception tokens of every light state of each row, deduplicated per row.
        elo = self.l_exc_ptr[s]
        ecnt = self.l_exc_ptr[s + 1] - elo
        er, eidx = _expand_ranges(elo.reshape(-1), ecnt.reshape(-1))
        if er.numel():
            er = er // P
            et = self.l_exc_key[eidx] % self.V
            key = torch.unique(er * self.V + et)
            er, et = key // self.V, key % self.V
            word = m[er, et >> 5]
            hard_ok = ((word >> (et & 31).to(torch.int32)) & 1).bool()
        code = self.l_code[s]  # [R, P]
        acc = code[:, 0]
        for p in range(1, P):
            acc = acc & code[:, p]
        m &= self.l_combo[acc]
        if er.numel():
            ok = hard_ok & (self.light_next(s[er], et) >= 0).all(-1)
            or_bits_torch(m, er[ok], et[ok], set_=True)
            or_bits_torch(m, er[~ok], et[~ok], set_=False)
        return m


def _expand_ranges(lo: torch.Tensor, cnt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For ranges ``[lo[i], lo[i]+cnt[i])``: (owner i, index) of every element, flattened."""
    total = int(cnt.sum())
    if total == 0:
        e = torch.zeros(0, dtype=torch.int64, device=lo.device)
        return e, e
    owner = torch.repeat_interleave(torch.arange(lo.numel(), device=lo.device), cnt, output_size=total)
    start = torch.cumsum(cnt, 0) - cnt
    idx = lo[owner] + (torch.arange(total, device=lo.device) - start[owner])
    return owner, idx
