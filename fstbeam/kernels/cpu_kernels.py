"""The numba kernels of the fast CPU backend: phase 1 (one streaming read per chunk) and
phase 2 (lse merge, chunk-max pruning, exact top-k). The algorithm, and the host code that runs
them on threads, are described in `cpu_fast`.

numba's on-disk cache keys on this file only, so it is also keyed on a hash of `_simd.py` and
`_simd_ir.py` (the intrinsics and their LLVM IR): an edit there drops the stale compiled code on
the next import (`numba_cache.key_cache_on`).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from numba import njit

from ._simd import (
    LOG2E_F32,
    SUB,
    chunk_candidates,
    chunk_exp2sum,
    chunk_exp2sum_masked,
    chunk_max2,
    chunk_maxsum,
    chunk_scan,
    f32_to_bits,
    load_f32,
    mask_bytes_state,
    prefetch_line,
)
from .numba_cache import key_cache_on

__all__ = ["CHUNK", "GROUP", "SUB", "first_bad_state", "order_key", "phase1", "phase2"]

CHUNK = 1024  # tokens per chunk: 32 mask words, 128 mask bytes, 4 KiB of float32
GROUP = 16  # chunks per phase-1 work item
_ALL_SET = 1  # mask_bytes_state results (0 = all clear)
_MIXED = 2
_OVERFLOW_MARGIN = np.float32(64.0)  # exp(64) * CHUNK stays far below float32 max
_NEG_INF32 = np.float32(-np.inf)
_L64 = np.float64(LOG2E_F32)
_LOW32 = np.int64(0xFFFFFFFF)
_SIGN_ONLY = np.int32(-(2**31))  # bit pattern of -0.0
_MANTISSA_EXP = np.int32(0x7FFFFFFF)


@njit
def _exp_ref(ref):
    """(zref, corr) for the SIMD exp-sums against `ref`: S(zref) * corr = sum(exp(x - ref))."""
    exact = np.float64(ref) * _L64  # exact: a 24-bit by 24-bit product fits a float64
    zref = np.float32(exact)
    return zref, 2.0 ** (np.float64(zref) - exact)


@njit
def _tail(src, off, n8, n, mb, moff):
    """(max, max over allowed) of the last n - 8*n8 (< 8) elements of a chunk, scalar."""
    cmax = _NEG_INF32
    amax = _NEG_INF32
    for j in range(8 * n8, n):
        v = load_f32(src, off + j)
        if v > cmax:
            cmax = v
        if (mb[moff + (j >> 3)] >> (j & 7)) & 1 and v > amax:
            amax = v
    return cmax, amax


@njit
def _tail_expsum(src, off, n8, n, mb, moff, ref, masked):
    total = 0.0
    for j in range(8 * n8, n):
        if masked and not (mb[moff + (j >> 3)] >> (j & 7)) & 1:
            continue
        total += math.exp(np.float64(load_f32(src, off + j)) - np.float64(ref))
    return total


@njit
def _scan_chunk(src, off, n, mb, moff, ref, total, aref, atotal, want_allowed, sub_best, sub_off):
    """Fold one chunk of n (<= CHUNK) elements into the running sums of a work item.

    (ref, total): total = sum(exp(x - ref)) over the chunks so far, ref = their max (-inf
    before the first finite logit). (aref, atotal): the same over allowed elements.
    Also writes the masked max of each SUB-token sub-block to sub_best[sub_off:] (an upper
    bound for a chunk whose tokens are all allowed). Returns (masked chunk max, ref, total,
    aref, atotal).
    """
    n8 = n >> 3
    if ref == _NEG_INF32:  # no finite logit yet: take this chunk's max as the reference
        first, _ = chunk_max2(src, off, n8, mb, moff)
        tail_max, _ = _tail(src, off, n8, n, mb, moff)
        first = max(first, tail_max)
        if first == _NEG_INF32:  # the whole chunk is -inf: nothing to add, nothing to select
            return _NEG_INF32, ref, total, aref, atotal
        ref = first
    zref, corr = _exp_ref(ref)
    mask_state = mask_bytes_state(mb, moff, n8 >> 3) if n == CHUNK else _MIXED
    if mask_state == _MIXED:
        cmax, amax, vsum = chunk_scan(src, off, n8, mb, moff, zref, sub_best, sub_off)
    else:  # a chunk with no allowed token, or only allowed ones: no per-token mask work
        cmax, vsum = chunk_maxsum(src, off, n8, zref)
        amax = cmax if mask_state == _ALL_SET else _NEG_INF32
        for i in range(CHUNK // SUB):
            sub_best[sub_off + i] = amax
    tail_max, tail_amax = _tail(src, off, n8, n, mb, moff)
    if 8 * n8 < n:  # the scalar tail belongs to the last sub-block (which may hold nothing else)
        last = sub_off + (n - 1) // SUB
        sub_best[last] = max(sub_best[last], tail_amax) if 8 * n8 > (n - 1) // SUB * SUB else tail_amax
    cmax = max(cmax, tail_max)
    amax = max(amax, tail_amax)
    if cmax > ref + _OVERFLOW_MARGIN:  # the vector sum may have overflowed: redo against cmax
        total *= math.exp(np.float64(ref) - np.float64(cmax))
        ref = cmax
        zref, corr = _exp_ref(ref)
        vsum = chunk_exp2sum(src, off, n8, zref)
    total += np.float64(vsum) * corr + _tail_expsum(src, off, n8, n, mb, moff, ref, False)
    if cmax > ref:  # keep ref = running max so later terms stay <= 1
        total *= math.exp(np.float64(ref) - np.float64(cmax))
        ref = cmax
    if want_allowed and amax > _NEG_INF32:
        if amax > aref:
            atotal = atotal * math.exp(np.float64(aref) - np.float64(amax)) if aref > _NEG_INF32 else 0.0
            aref = amax
        zref, corr = _exp_ref(aref)
        atotal += np.float64(chunk_exp2sum_masked(src, off, n8, mb, moff, zref)) * corr
        atotal += _tail_expsum(src, off, n8, n, mb, moff, aref, True)
    return amax, ref, total, aref, atotal


@njit(nogil=True, cache=True)
def phase1(x, row_off, col_stride, vocab, mb, mrow_bytes, row_state, want_allowed,
            chunk_best, sub_best, part_m, part_s, part_am, part_as, item_begin, item_end):
    """Work items [item_begin, item_end) of phase 1; item = row * ngroups + group.

    Shapes: chunk_best [R, nchunks], sub_best [R, nchunks * CHUNK // SUB], part_* [R, ngroups].
    With unit column stride the chunks are read in place; otherwise each is gathered into a
    float32 scratch buffer first.
    """
    nchunks = chunk_best.shape[1]
    ngroups = part_m.shape[1]
    scratch = np.empty(CHUNK if col_stride != 1 else 0, np.float32)
    for item in range(item_begin, item_end):
        r = item // ngroups
        g = item - r * ngroups
        base = row_off[r]
        mbase = row_state[r] * mrow_bytes
        ref = _NEG_INF32
        total = 0.0
        aref = _NEG_INF32
        atotal = 0.0
        for c in range(g * GROUP, min(g * GROUP + GROUP, nchunks)):
            start = c * CHUNK
            n = min(CHUNK, vocab - start)
            moff = mbase + (start >> 3)
            subs = sub_best[r]
            if col_stride == 1:
                best, ref, total, aref, atotal = _scan_chunk(
                    x, base + start, n, mb, moff, ref, total, aref, atotal, want_allowed, subs, start // SUB
                )
            else:
                for j in range(n):
                    scratch[j] = load_f32(x, base + (start + j) * col_stride)
                best, ref, total, aref, atotal = _scan_chunk(
                    scratch, 0, n, mb, moff, ref, total, aref, atotal, want_allowed, subs, start // SUB
                )
            chunk_best[r, c] = best
        part_m[r, g] = ref
        part_s[r, g] = total
        part_am[r, g] = aref
        part_as[r, g] = atotal


@njit
def _merge_lse(part_m, part_s):
    """log(sum_g part_s[g] * exp(part_m[g])) in float32; -inf when every part is empty."""
    top = _NEG_INF32
    for g in range(part_m.shape[0]):
        if part_m[g] > top:
            top = part_m[g]
    if top == _NEG_INF32:
        return _NEG_INF32
    total = 0.0
    for g in range(part_m.shape[0]):
        if part_m[g] > _NEG_INF32:
            total += part_s[g] * math.exp(np.float64(part_m[g]) - np.float64(top))
    return np.float32(np.float64(top) + math.log(total))


@njit
def order_key(v, token):
    """int64 key whose order is (v ascending, token descending); -0.0 counts as +0.0."""
    bits = f32_to_bits(v)
    if bits == _SIGN_ONLY:
        bits = np.int32(0)
    if bits < 0:
        bits = bits ^ _MANTISSA_EXP
    return (np.int64(bits) << 32) | (_LOW32 - np.int64(token))


@njit
def _collect(src, off, n, mb, moff, threshold, first_token, group_bits, keys, count):
    """Append the order keys of the tokens of src[off : off + n] (token ids from first_token)
    that are allowed, > -inf and >= threshold to keys[:count], growing keys when full;
    returns (keys, count)."""
    n8 = n >> 3
    if chunk_candidates(src, off, n8, mb, moff, threshold, group_bits) > 0:
        for g in range(n8):
            bits = group_bits[g]
            if bits == 0:
                continue
            for j in range(8 * g, 8 * g + 8):
                if (bits >> (j & 7)) & 1:
                    keys, count = _push(keys, count, order_key(load_f32(src, off + j), first_token + j))
    for j in range(8 * n8, n):  # the scalar tail of the last sub-block
        v = load_f32(src, off + j)
        if v >= threshold and v > _NEG_INF32 and (mb[moff + (j >> 3)] >> (j & 7)) & 1:
            keys, count = _push(keys, count, order_key(v, first_token + j))
    return keys, count


@njit
def _sort_keys(keys, count):
    """Sort keys[:count] ascending: insertion sort for the usual handful, numpy's otherwise."""
    if count > 32:
        keys[:count].sort()
        return
    for i in range(1, count):
        key = keys[i]
        j = i - 1
        while j >= 0 and keys[j] > key:
            keys[j + 1] = keys[j]
            j -= 1
        keys[j + 1] = key


@njit
def _push(keys, count, key):
    if count == keys.shape[0]:
        grown = np.empty(2 * keys.shape[0], np.int64)
        grown[:count] = keys
        keys = grown
    keys[count] = key
    return keys, count + 1


@njit(nogil=True, cache=True)
def phase2(x, row_off, col_stride, vocab, mb, mrow_bytes, row_state, scores, k, want_allowed,
            chunk_best, sub_best, part_m, part_s, part_am, part_as,
            lse_out, tokens_out, scores_out, logprobs_out, all_masked_out, allowed_lse_out,
            row_begin, row_end):
    """Rows [row_begin, row_end) of phase 2: lse, the threshold, the candidates, the top-k."""
    nchunks = chunk_best.shape[1]
    nsubs = (vocab + SUB - 1) // SUB  # sub_best columns past this one hold no tokens
    line_elems = 64 // x.itemsize
    group_bits = np.empty(SUB // 8, np.uint8)
    scratch = np.empty(SUB if col_stride != 1 else 0, np.float32)
    keys = np.empty(4 * k + 64, np.int64)  # grows on demand (ties can make many candidates)
    top = np.empty(max(min(k, nchunks), 1), np.float32)
    for r in range(row_begin, row_end):
        lse = _merge_lse(part_m[r], part_s[r])
        lse_out[r] = lse
        if want_allowed:
            allowed_lse_out[r] = _merge_lse(part_am[r], part_as[r])
        # T = k-th largest masked chunk max (top[] kept sorted descending); -inf if < k chunks
        keep = min(k, nchunks)
        top[:] = _NEG_INF32
        live = 0
        for c in range(nchunks):
            v = chunk_best[r, c]
            if v == _NEG_INF32:
                continue
            live += 1
            if keep > 0 and v > top[keep - 1]:
                i = keep - 1
                while i > 0 and top[i - 1] < v:
                    top[i] = top[i - 1]
                    i -= 1
                top[i] = v
        all_masked_out[r] = live == 0
        threshold = top[keep - 1] if keep > 0 and live >= k else _NEG_INF32
        base = row_off[r]
        mbase = row_state[r] * mrow_bytes
        count = 0
        if k > 0:  # collect the keys of the candidates: sub-blocks with a masked max >= threshold
            if col_stride == 1:  # request every candidate line first, so that the misses overlap
                for c in range(nchunks):
                    if chunk_best[r, c] == _NEG_INF32 or chunk_best[r, c] < threshold:
                        continue
                    for sb in range(c * (CHUNK // SUB), min((c + 1) * (CHUNK // SUB), nsubs)):
                        if sub_best[r, sb] != _NEG_INF32 and sub_best[r, sb] >= threshold:
                            for line in range(0, min(SUB, vocab - sb * SUB), line_elems):
                                prefetch_line(x, base + sb * SUB + line)
            for c in range(nchunks):
                if chunk_best[r, c] == _NEG_INF32 or chunk_best[r, c] < threshold:
                    continue
                for sb in range(c * (CHUNK // SUB), min((c + 1) * (CHUNK // SUB), nsubs)):
                    if sub_best[r, sb] == _NEG_INF32 or sub_best[r, sb] < threshold:
                        continue
                    start = sb * SUB
                    n = min(SUB, vocab - start)
                    if col_stride == 1:
                        keys, count = _collect(x, base + start, n, mb, mbase + (start >> 3), threshold, start,
                                               group_bits, keys, count)
                    else:
                        for j in range(n):
                            scratch[j] = load_f32(x, base + (start + j) * col_stride)
                        keys, count = _collect(scratch, 0, n, mb, mbase + (start >> 3), threshold, start,
                                               group_bits, keys, count)
            _sort_keys(keys, count)
        for i in range(k):
            if i < count:
                token = _LOW32 - (keys[count - 1 - i] & _LOW32)  # keys[:count] ascend
                logprob = load_f32(x, base + token * col_stride) - lse
                tokens_out[r, i] = token
                logprobs_out[r, i] = logprob
                scores_out[r, i] = scores[r] + logprob
            else:
                tokens_out[r, i] = -1
                logprobs_out[r, i] = _NEG_INF32
                scores_out[r, i] = _NEG_INF32


@njit(cache=True)
def first_bad_state(states, num_states):
    """The first row whose state is outside 0..num_states-1, or -1."""
    for r in range(states.shape[0]):
        if states[r] < 0 or states[r] >= num_states:
            return r
    return -1


key_cache_on(__file__, [Path(__file__).with_name(f) for f in ("_simd.py", "_simd_ir.py")], phase1, phase2, first_bad_state)
