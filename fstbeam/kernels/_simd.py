"""Explicit 8-lane (AVX2-width) loops for the numba CPU path, written as LLVM IR.

numba's auto-vectorizer does not reliably vectorize the loops `cpu_fast` needs (measured with
numba 0.68 / LLVM 22): float max reductions stay scalar, a masked max becomes branches, and
the exp-sum is runtime-unrolled until the accumulators spill. These intrinsics spell each
loop out with `<8 x float>` vectors and mark it "do not unroll", so the loop we measured is
the loop that runs. On a CPU without AVX2, LLVM splits the vectors into narrower ones.

Every loop works on `n8` groups of 8 consecutive elements of a 1-D C-contiguous numba array
`x`, starting at element `off` (a tail of fewer than 8 elements is the caller's job). `x`
holds float32, or 16-bit floats stored as integers because numba has no CPU half type:
uint16 = bfloat16 bits, int16 = IEEE float16 bits. Masks are the bitmask row viewed as bytes
(`uint8`; the int32 words are little-endian, so byte g of the row holds the allow-bits of
elements 8g..8g+7, bit j = element 8g+j).

Exposed to numba code (all results float32):
    chunk_max2(x, off, n8, mbytes, moff)         -> (max, max over allowed)
    chunk_scan(x, off, n8, mbytes, moff, zref, sub_out, sub_off)
                                                 -> (max, max over allowed, S), and the
                                                    masked max of each 128 tokens in sub_out
    chunk_maxsum(x, off, n8, zref)               -> (max, S)   (chunks with a uniform mask)
    chunk_exp2sum(x, off, n8, zref)              -> S
    chunk_exp2sum_masked(x, off, n8, mbytes, moff, zref) -> S over allowed elements only
    load_f32(x, i)                               -> x[i] decoded to float32
    f32_to_bits(v)                               -> int32 bit pattern
    mask_bytes_state(mbytes, moff, n64)          -> 0 all clear / 1 all set / 2 mixed
    chunk_candidates(x, off, n8, mbytes, moff, t, out) -> per group, bits of the allowed
                                                   elements > -inf and >= t (into out[g])
where S = sum(2**(x*L - zref)) with L = LOG2E_F32 = float32(log2(e)). Callers pass
zref = float32(ref * L) for a reference value `ref` (the running max) and undo the rounding
of that product exactly (`cpu_kernels._exp_ref`), so that S * correction = sum(exp(x - ref)) up
to float32 rounding. Folding the reference into one FMA saves an instruction per 8 elements.

The LLVM IR of these loops (constants, vector helpers, the exp2 polynomial, the reductions
and the chunk-scan loop) is built in `_simd_ir.py`.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._simd_ir import (  # noqa: F401 - EXP2_COEFFS, LOG2E_F32, SUB are re-exported
    _EXP2SUM,
    _EXP2SUM_MASKED,
    _F32,
    _I8,
    _I16,
    _I32,
    _I64,
    _MAX2,
    _MAXSUM,
    _NEG_INF,
    _PTR,
    _V8F,
    _V8I32,
    EXP2_COEFFS,
    LANES,
    LOG2E_F32,
    SUB,
    _check_array,
    _check_mask,
    _define_scan,
    _i64,
    _intrinsic_fn,
    _kind_of,
    _load8,
    _lower_reduction,
    _splat_f,
)

__all__ = [
    "EXP2_COEFFS",
    "LOG2E_F32",
    "SUB",
    "chunk_exp2sum",
    "chunk_exp2sum_masked",
    "chunk_max2",
    "chunk_maxsum",
    "chunk_candidates",
    "chunk_scan",
    "f32_to_bits",
    "load_f32",
    "mask_bytes_state",
    "prefetch_line",
]


# ---------------------------------------------------------------- numba intrinsics


@intrinsic
def chunk_max2(typingctx, x, off, n8, mbytes, moff):
    """(max, max over allowed) of x[off : off + 8*n8]; -inf when there is nothing."""
    _check_array(x, "x")
    _check_mask(mbytes)
    kind = _kind_of(x)
    sig = types.UniTuple(types.float32, 2)(x, off, n8, mbytes, moff)

    def codegen(context, builder, signature, args):
        return _lower_reduction(_MAX2, kind, context, builder, signature, args, has_mask=True, has_ref=False)

    return sig, codegen


@intrinsic
def chunk_scan(typingctx, x, off, n8, mbytes, moff, zref, sub_out, sub_off):
    """(max, max over allowed, sum(2**(x*L - zref))) of x[off : off + 8*n8], one read; also
    sub_out[sub_off + i] = max over the allowed tokens of the i-th SUB-token sub-block.

    The sum is only meaningful when max*L - zref <= ~127 (the caller checks the max)."""
    _check_array(x, "x")
    _check_mask(mbytes)
    _check_array(sub_out, "sub_out")
    if sub_out.dtype != types.float32:
        raise TypeError(f"sub_out must be a float32 array, got {sub_out}")
    kind = _kind_of(x)
    sig = types.UniTuple(types.float32, 3)(x, off, n8, mbytes, moff, types.float32, sub_out, sub_off)

    def codegen(context, builder, signature, args):
        x_ty, off_ty, n_ty, m_ty, moff_ty, _z_ty, s_ty, soff_ty = signature.args
        sub_base = context.make_array(s_ty)(context, builder, value=args[6]).data
        sub_ptr = builder.gep(sub_base, [context.cast(builder, args[7], soff_ty, types.int64)], source_etype=_F32)
        result = builder.call(_define_scan(builder.module, kind), [
            context.make_array(x_ty)(context, builder, value=args[0]).data,
            context.cast(builder, args[1], off_ty, types.int64),
            context.cast(builder, args[2], n_ty, types.int64),
            context.make_array(m_ty)(context, builder, value=args[3]).data,
            context.cast(builder, args[4], moff_ty, types.int64),
            args[5],
            sub_ptr,
        ])
        parts = [builder.extract_value(result, i) for i in range(3)]
        return context.make_tuple(builder, signature.return_type, parts)

    return sig, codegen


@intrinsic
def chunk_maxsum(typingctx, x, off, n8, zref):
    """(max, sum(2**(x*L - zref))) of x[off : off + 8*n8]: `chunk_scan` for chunks whose mask
    bytes are all 0 or all 1, where the masked max needs no per-element work."""
    _check_array(x, "x")
    kind = _kind_of(x)
    sig = types.UniTuple(types.float32, 2)(x, off, n8, types.float32)

    def codegen(context, builder, signature, args):
        return _lower_reduction(_MAXSUM, kind, context, builder, signature, args, has_mask=False, has_ref=True)

    return sig, codegen


@intrinsic
def mask_bytes_state(typingctx, mbytes, moff, n64):
    """0 if the 8*n64 mask bytes from mbytes[moff] are all 0, 1 if all 0xFF, 2 otherwise."""
    _check_mask(mbytes)
    sig = types.int64(mbytes, moff, n64)

    def codegen(context, builder, signature, args):
        m_ty, moff_ty, n_ty = signature.args
        base = context.make_array(m_ty)(context, builder, value=args[0]).data
        start = context.cast(builder, args[1], moff_ty, types.int64)
        count = context.cast(builder, args[2], n_ty, types.int64)
        any_bits = cgutils.alloca_once_value(builder, _i64(0))
        all_bits = cgutils.alloca_once_value(builder, _i64(-1))
        with cgutils.for_range(builder, count) as loop:
            ptr = builder.gep(base, [builder.add(start, builder.mul(loop.index, _i64(8)))], source_etype=_I8)
            word = builder.load(ptr, typ=_I64, align=1)  # unaligned 8-byte load
            builder.store(builder.or_(builder.load(any_bits), word), any_bits)
            builder.store(builder.and_(builder.load(all_bits), word), all_bits)
        is_zero = builder.icmp_unsigned("==", builder.load(any_bits), _i64(0))
        is_full = builder.icmp_unsigned("==", builder.load(all_bits), _i64(-1))
        return builder.select(is_zero, _i64(0), builder.select(is_full, _i64(1), _i64(2)))

    return sig, codegen


@intrinsic
def chunk_exp2sum(typingctx, x, off, n8, zref):
    """sum(2**(x*L - zref)) over x[off : off + 8*n8]."""
    _check_array(x, "x")
    kind = _kind_of(x)
    sig = types.float32(x, off, n8, types.float32)

    def codegen(context, builder, signature, args):
        return _lower_reduction(_EXP2SUM, kind, context, builder, signature, args, has_mask=False, has_ref=True)

    return sig, codegen


@intrinsic
def chunk_exp2sum_masked(typingctx, x, off, n8, mbytes, moff, zref):
    """sum(2**(x*L - zref)) over the allowed elements of x[off : off + 8*n8]."""
    _check_array(x, "x")
    _check_mask(mbytes)
    kind = _kind_of(x)
    sig = types.float32(x, off, n8, mbytes, moff, types.float32)

    def codegen(context, builder, signature, args):
        return _lower_reduction(
            _EXP2SUM_MASKED, kind, context, builder, signature, args, has_mask=True, has_ref=True
        )

    return sig, codegen


@intrinsic
def chunk_candidates(typingctx, x, off, n8, mbytes, moff, threshold, out):
    """out[g] = bits of the elements of group g that are allowed, > -inf and >= threshold
    (bit j = element 8g+j), for the n8 groups of x[off:]; returns how many groups are nonzero."""
    _check_array(x, "x")
    _check_mask(mbytes)
    _check_mask(out)
    kind = _kind_of(x)
    sig = types.int64(x, off, n8, mbytes, moff, types.float32, out)

    def codegen(context, builder, signature, args):
        x_ty, off_ty, n_ty, m_ty, moff_ty, _t_ty, out_ty = signature.args
        x_ptr = context.make_array(x_ty)(context, builder, value=args[0]).data
        start = context.cast(builder, args[1], off_ty, types.int64)
        count = context.cast(builder, args[2], n_ty, types.int64)
        m_ptr = context.make_array(m_ty)(context, builder, value=args[3]).data
        mstart = context.cast(builder, args[4], moff_ty, types.int64)
        out_ptr = context.make_array(out_ty)(context, builder, value=args[6]).data
        threshold8 = builder.shuffle_vector(
            builder.insert_element(ir.Constant(_V8F, ir.Undefined), args[5], ir.Constant(_I32, 0)),
            ir.Constant(_V8F, ir.Undefined), ir.Constant(_V8I32, [0] * LANES),
        )
        nonzero = cgutils.alloca_once_value(builder, _i64(0))
        with cgutils.for_range(builder, count) as loop:
            g = loop.index
            x8 = _load8(builder, kind, x_ptr, builder.add(start, builder.mul(g, _i64(LANES))))
            keep = builder.and_(builder.fcmp_ordered(">=", x8, threshold8),
                                builder.fcmp_ordered(">", x8, _splat_f(_NEG_INF)))
            byte = builder.load(builder.gep(m_ptr, [builder.add(mstart, g)], source_etype=_I8), typ=_I8)
            bits = builder.and_(builder.bitcast(keep, _I8), byte)  # vmovmskps, then the mask byte
            builder.store(bits, builder.gep(out_ptr, [g], source_etype=_I8))
            hit = builder.zext(builder.icmp_unsigned("!=", bits, ir.Constant(_I8, 0)), _I64)
            builder.store(builder.add(builder.load(nonzero), hit), nonzero)
        return builder.load(nonzero)

    return sig, codegen


@intrinsic
def prefetch_line(typingctx, x, i):
    """Prefetch the cache line holding x[i] (x 1-D C-contiguous); a prefetch never faults."""
    _check_array(x, "x")
    kind = _kind_of(x)
    sig = types.void(x, i)

    def codegen(context, builder, signature, args):
        base = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        index = context.cast(builder, args[1], signature.args[1], types.int64)
        ptr = builder.gep(base, [index], source_etype=_F32 if kind == "f32" else _I16)
        fn = _intrinsic_fn(builder.module, "llvm.prefetch.p0", ir.VoidType(), [_PTR, _I32, _I32, _I32])
        builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_f32(typingctx, x, i):
    """x[i] as float32 (bfloat16 / float16 bit patterns decoded exactly)."""
    if not isinstance(x, types.Array) or x.ndim != 1:
        raise TypeError(f"x must be a 1-D array, got {x}")
    kind = _kind_of(x)
    sig = types.float32(x, i)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, value=args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        raw = builder.load(cgutils.get_item_pointer(context, builder, aryty, ary, [index]))
        if kind == "f32":
            return raw
        if kind == "bf16":
            return builder.bitcast(builder.shl(builder.zext(raw, _I32), ir.Constant(_I32, 16)), _F32)
        return builder.fpext(builder.bitcast(raw, ir.HalfType()), _F32)

    return sig, codegen


@intrinsic
def f32_to_bits(typingctx, v):
    """The IEEE-754 bit pattern of a float32, as int32."""
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I32)

    return sig, codegen
