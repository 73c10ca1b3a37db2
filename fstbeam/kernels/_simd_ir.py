"""LLVM IR building blocks of the 8-lane loops that `_simd.py` exposes to numba: constants,
vector helpers, the exp2 polynomial, the reductions and the chunk-scan loop.

2**z is evaluated by range reduction: z is clamped at -126, rounded to an integer n with the
1.5*2**23 trick (whose bit pattern also yields n << 23), f = z - n in [-0.5, 0.5], 2**f is a
degree-5 polynomial (relative-error minimax fit; max relative error 2.5e-7 when evaluated in
float32, checked in tests/kernels/test_cpu_fast.py), and 2**n is applied by adding n << 23
to the result's exponent bits. The clamp makes terms below 2**-126 (including x = -inf)
count as ~1e-38 instead of 0, invisible in a sum that holds at least one term >= 1, which
every caller ensures. z must stay below ~127: callers keep max(x) - ref <= 64.
No fast-math reassociation is used; max is llvm.maxnum with no-NaN flags (NaN logits are
outside the kernel contract).

Why degree 5, an integer exponent add and one unrolled loop: measured on the 2-core Zen 3
box, each FMA of the polynomial costs ~0.036 ns/element/core and the loops are bound by the
floating-point pipes, so every vector instruction counts; LLVM's own unrolling of these
bodies spilled accumulators and was slower.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types

LANES = 8
# Software prefetch distance of the vector loops (one 4 KiB chunk of float32 ahead): lets
# the next chunk stream in while this one is computed (~8% faster single-threaded).
PREFETCH_BYTES = 4096
# 2**f on [-0.5, 0.5], highest degree first (Horner order). Fitted once by a Lawson-weighted
# least-squares iteration on Chebyshev nodes for relative error (7.5e-8 in float64), then
# rounded to float32.
EXP2_COEFFS = (
    0.001327647129073739,
    0.009675540961325169,
    0.05550713092088699,
    0.24022120237350464,
    0.6931469440460205,
    1.0000001192092896,
)
LOG2E_F32 = 1.4426950216293335  # float32(log2(e)), exactly representable in float32
_ROUND_MAGIC = 12582912.0  # 1.5 * 2**23: see _vexp2
_Z_MIN = -126.0  # 2**-126 is the smallest normal float32

_F32 = ir.FloatType()
_I8 = ir.IntType(8)
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_V8F = ir.VectorType(_F32, LANES)
_V8I32 = ir.VectorType(_I32, LANES)
_PTR = ir.PointerType()
_MAX_FLAGS = ("nnan", "nsz")
_NEG_INF = float("-inf")


def _splat_f(value: float) -> ir.Constant:
    return ir.Constant(_V8F, [value] * LANES)


def _splat_i(value: int) -> ir.Constant:
    return ir.Constant(_V8I32, [value] * LANES)


def _i64(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


def _kind_of(arytype) -> str:
    """Element encoding of a numba array type: 'f32', 'bf16' (uint16 bits) or 'f16' (int16 bits)."""
    dtype = arytype.dtype
    if dtype == types.float32:
        return "f32"
    if dtype == types.uint16:
        return "bf16"
    if dtype == types.int16:
        return "f16"
    raise TypeError(f"fstbeam SIMD loops take float32/uint16(bf16)/int16(fp16) arrays, got {dtype}")


def _check_array(arytype, what: str) -> None:
    if not isinstance(arytype, types.Array) or arytype.ndim != 1 or arytype.layout != "C":
        raise TypeError(f"{what} must be a 1-D C-contiguous array, got {arytype}")


# ---------------------------------------------------------------- IR building blocks


def _intrinsic_fn(module: ir.Module, name: str, ret, args) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn


def _vmax(b: ir.IRBuilder, x, y):
    fn = _intrinsic_fn(b.module, "llvm.maxnum.v8f32", _V8F, [_V8F, _V8F])
    return b.call(fn, [x, y], fastmath=_MAX_FLAGS)


def _vfma(b: ir.IRBuilder, x, y, z):
    fn = _intrinsic_fn(b.module, "llvm.fma.v8f32", _V8F, [_V8F, _V8F, _V8F])
    return b.call(fn, [x, y, z])


def _hmax(b: ir.IRBuilder, v):
    fn = _intrinsic_fn(b.module, "llvm.maxnum.f32", _F32, [_F32, _F32])
    out = b.extract_element(v, ir.Constant(_I32, 0))
    for lane in range(1, LANES):
        out = b.call(fn, [out, b.extract_element(v, ir.Constant(_I32, lane))], fastmath=_MAX_FLAGS)
    return out


def _hsum(b: ir.IRBuilder, v):
    lanes = [b.extract_element(v, ir.Constant(_I32, lane)) for lane in range(LANES)]
    while len(lanes) > 1:  # pairwise
        half = len(lanes) // 2
        lanes = [b.fadd(lanes[i], lanes[i + half]) for i in range(half)]
    return lanes[0]


def _load8(b: ir.IRBuilder, kind: str, base, index):
    """8 consecutive elements starting at element `index` of `base`, as <8 x float>."""
    if kind == "f32":
        return b.load(b.gep(base, [index], source_etype=_F32), typ=_V8F, align=4)
    ptr = b.gep(base, [index], source_etype=_I16)
    if kind == "bf16":
        raw = b.load(ptr, typ=ir.VectorType(_I16, LANES), align=2)
        return b.bitcast(b.shl(b.zext(raw, _V8I32), _splat_i(16)), _V8F)
    raw = b.load(ptr, typ=ir.VectorType(ir.HalfType(), LANES), align=2)
    return b.fpext(raw, _V8F)


def _prefetch(b: ir.IRBuilder, kind: str, base, index) -> None:
    """Prefetch (read, keep in all cache levels) PREFETCH_BYTES past element `index`; a
    prefetch never faults, so running past the end of the array is harmless."""
    etype, size = (_F32, 4) if kind == "f32" else (_I16, 2)
    ahead = b.gep(base, [b.add(index, _i64(PREFETCH_BYTES // size))], source_etype=etype)
    fn = _intrinsic_fn(b.module, "llvm.prefetch.p0", ir.VoidType(), [_PTR, _I32, _I32, _I32])
    b.call(fn, [ahead, ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)])


def _byte_table(module: ir.Module, name: str, vec_type, allowed, masked) -> ir.GlobalVariable:
    """[256 x vec_type] constant: row `byte`, lane j = `allowed` if bit j of `byte` is set, else
    `masked`. One load turns a mask byte into 8 lanes (LLVM expands a `bitcast i8 to <8 x i1>`
    bit by bit)."""
    table = module.globals.get(name)
    if table is None:
        row_type = ir.ArrayType(vec_type, 256)
        rows = [ir.Constant(vec_type, [allowed if (byte >> lane) & 1 else masked for lane in range(LANES)])
                for byte in range(256)]
        table = ir.GlobalVariable(module, row_type, name=name)
        table.initializer = ir.Constant(row_type, rows)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 32
    return table


def _load_byte_row(b: ir.IRBuilder, mbase, mindex, table, vec_type):
    """Row of `table` selected by the mask byte at `mbase[mindex]`."""
    byte = b.zext(b.load(b.gep(mbase, [mindex], source_etype=_I8), typ=_I8, align=1), _I64)
    row = b.gep(table, [_i64(0), byte], source_etype=table.value_type)
    return b.load(row, typ=vec_type, align=32)


def _load_penalty8(b: ir.IRBuilder, mbase, mindex):
    """The mask byte of one group as <8 x float> of 0.0 (allowed) / -inf (masked).

    Adding the row of a mask byte to 8 logits masks them with one vector add (x + -inf = -inf),
    cheaper than expanding the byte into a lane mask and blending.
    """
    table = _byte_table(b.module, "fstbeam_mask_penalty", _V8F, 0.0, _NEG_INF)
    return _load_byte_row(b, mbase, mindex, table, _V8F)


def _load_lanes8(b: ir.IRBuilder, mbase, mindex):
    """The mask byte of one group as <8 x i32> lane masks (-1 allowed / 0 masked)."""
    table = _byte_table(b.module, "fstbeam_mask_lanes", _V8I32, -1, 0)
    return _load_byte_row(b, mbase, mindex, table, _V8I32)


def _vexp2(b: ir.IRBuilder, x8, nzref8):
    """2**(x*L - zref) per lane, given nzref8 = -zref (see the module docstring)."""
    z = _vfma(b, x8, _splat_f(LOG2E_F32), nzref8)
    z = _vmax(b, z, _splat_f(_Z_MIN))
    # y = z + 1.5*2**23 rounds z to an integer n held in y's low mantissa bits: n = y - magic
    # exactly, and y's bit pattern shifted left by 23 is n << 23, the exponent increment that
    # turns p = 2**f into p * 2**n with an integer add instead of a multiply.
    y = b.fadd(z, _splat_f(_ROUND_MAGIC))
    f = b.fsub(z, b.fsub(y, _splat_f(_ROUND_MAGIC)))
    p = _splat_f(EXP2_COEFFS[0])
    for coeff in EXP2_COEFFS[1:]:
        p = _vfma(b, p, f, _splat_f(coeff))
    n_shifted = b.shl(b.bitcast(y, _V8I32), _splat_i(23))
    return b.bitcast(b.add(b.bitcast(p, _V8I32), n_shifted), _V8F)


class _LoopID(ir.values.MDValue):
    """A self-referential loop-ID metadata node `!N = !{!N, ...}`. llvmlite's
    `Module.add_metadata` uniques nodes by operands and cannot build a cycle, so this one is
    made directly and compared by identity."""

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


def _no_unroll(module: ir.Module) -> ir.values.MDValue:
    disable = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    loop_id = _LoopID(module, [disable], name=str(len(module.metadata)))
    loop_id.operands = (loop_id, disable)
    return loop_id


class _Reduction:
    """One vector loop: accumulators, a per-group step and a final merge into the result."""

    def __init__(self, name, *, init, step, finish, ret_type, mask=None, uses_ref=False):
        self.name = name
        self.init = init  # () -> [initial accumulator constants]
        self.step = step  # (b, x8, mask8, nzref8, accs) -> accs
        self.finish = finish  # (b, accs) -> return value
        self.ret_type = ret_type
        self.mask = mask  # None, "penalty" (<8 x float> 0/-inf) or "lanes" (<8 x i32> -1/0)
        self.uses_ref = uses_ref

    def define(self, module: ir.Module, kind: str) -> ir.Function:
        """`ret name_kind(ptr x, i64 off, i64 n8, ptr mbytes, i64 moff, float zref)`, once per module."""
        name = f"fstbeam_{self.name}_{kind}"
        fn = module.globals.get(name)
        if fn is not None:
            return fn
        fn = ir.Function(module, ir.FunctionType(self.ret_type, [_PTR, _I64, _I64, _PTR, _I64, _F32]), name=name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        x_ptr, off, n8, m_ptr, moff, zref = fn.args
        entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))

        b = ir.IRBuilder(entry)
        nzref8 = None
        if self.uses_ref:
            lane0 = b.insert_element(ir.Constant(_V8F, ir.Undefined), b.fneg(zref), ir.Constant(_I32, 0))
            nzref8 = b.shuffle_vector(lane0, ir.Constant(_V8F, ir.Undefined), ir.Constant(_V8I32, [0] * LANES))
        init = self.init()
        b.cbranch(b.icmp_signed(">", n8, _i64(0)), loop, done)

        b = ir.IRBuilder(loop)
        g = b.phi(_I64)
        accs = [b.phi(a.type) for a in init]
        index = b.add(off, b.mul(g, _i64(LANES)))
        x8 = _load8(b, kind, x_ptr, index)
        _prefetch(b, kind, x_ptr, index)
        mask8 = None
        if self.mask == "penalty":
            mask8 = _load_penalty8(b, m_ptr, b.add(moff, g))
        elif self.mask == "lanes":
            mask8 = _load_lanes8(b, m_ptr, b.add(moff, g))
        new = self.step(b, x8, mask8, nzref8, accs)
        g_next = b.add(g, _i64(1))
        back = b.cbranch(b.icmp_signed("<", g_next, n8), loop, done)
        back.set_metadata("llvm.loop", _no_unroll(module))
        g.add_incoming(_i64(0), entry)
        g.add_incoming(g_next, loop)
        for phi, start, value in zip(accs, init, new):
            phi.add_incoming(start, entry)
            phi.add_incoming(value, loop)

        b = ir.IRBuilder(done)
        final = [b.phi(a.type) for a in init]
        for phi, start, value in zip(final, init, new):
            phi.add_incoming(start, entry)
            phi.add_incoming(value, loop)
        b.ret(self.finish(b, final))
        return fn


SUB = 128  # tokens per sub-block of chunk_scan's masked maxima (16 groups, 16 mask bytes)


def _define_scan(module: ir.Module, kind: str) -> ir.Function:
    """`{max, masked max, S} scan_kind(ptr x, i64 off, i64 n8, ptr mbytes, i64 moff, float zref,
    ptr sub_out)`: one read of n8 groups; also stores the masked max of every SUB tokens to
    sub_out[0 .. ceil(n8 / 16)). Two nested loops: sub-blocks, then the 16 groups of each."""
    name = f"fstbeam_scan_{kind}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    ret = ir.LiteralStructType([_F32, _F32, _F32])
    fn = ir.Function(module, ir.FunctionType(ret, [_PTR, _I64, _I64, _PTR, _I64, _F32, _PTR]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    x_ptr, off, n8, m_ptr, moff, zref, sub_ptr = fn.args
    entry, outer, inner, close, done = (fn.append_basic_block(n) for n in ("entry", "outer", "inner", "close", "done"))
    groups = SUB // LANES
    neg_inf8, zero8 = _splat_f(_NEG_INF), _splat_f(0.0)
    neg_inf = ir.Constant(_F32, _NEG_INF)

    b = ir.IRBuilder(entry)
    lane0 = b.insert_element(ir.Constant(_V8F, ir.Undefined), b.fneg(zref), ir.Constant(_I32, 0))
    nzref8 = b.shuffle_vector(lane0, ir.Constant(_V8F, ir.Undefined), ir.Constant(_V8I32, [0] * LANES))
    nsub = b.lshr(b.add(n8, _i64(groups - 1)), _i64(4))
    b.cbranch(b.icmp_signed(">", nsub, _i64(0)), outer, done)

    b = ir.IRBuilder(outer)  # start of sub-block sb
    sb = b.phi(_I64)
    m_out = b.phi(_V8F)
    s_out = b.phi(_V8F)
    am_out = b.phi(_F32)
    g_first = b.mul(sb, _i64(groups))
    g_end = b.add(g_first, _i64(groups))
    g_end = b.select(b.icmp_signed("<", g_end, n8), g_end, n8)
    b.branch(inner)

    b = ir.IRBuilder(inner)  # one group of 8 tokens
    g = b.phi(_I64)
    m = b.phi(_V8F)
    am = b.phi(_V8F)
    total = b.phi(_V8F)
    index = b.add(off, b.mul(g, _i64(LANES)))
    x8 = _load8(b, kind, x_ptr, index)
    _prefetch(b, kind, x_ptr, index)
    pen8 = _load_penalty8(b, m_ptr, b.add(moff, g))
    m_new = _vmax(b, m, x8)
    am_new = _vmax(b, am, b.fadd(x8, pen8))
    total_new = b.fadd(total, _vexp2(b, x8, nzref8))
    g_next = b.add(g, _i64(1))
    back = b.cbranch(b.icmp_signed("<", g_next, g_end), inner, close)
    back.set_metadata("llvm.loop", _no_unroll(module))
    g.add_incoming(g_first, outer)
    g.add_incoming(g_next, inner)
    for phi, start, new in ((m, m_out, m_new), (am, neg_inf8, am_new), (total, s_out, total_new)):
        phi.add_incoming(start, outer)
        phi.add_incoming(new, inner)

    b = ir.IRBuilder(close)  # store the sub-block's masked max, move to the next one
    sub_max = _hmax(b, am_new)
    b.store(sub_max, b.gep(sub_ptr, [sb], source_etype=_F32))
    am_total = b.call(_intrinsic_fn(module, "llvm.maxnum.f32", _F32, [_F32, _F32]), [am_out, sub_max],
                      fastmath=_MAX_FLAGS)
    sb_next = b.add(sb, _i64(1))
    back = b.cbranch(b.icmp_signed("<", sb_next, nsub), outer, done)
    back.set_metadata("llvm.loop", _no_unroll(module))
    sb.add_incoming(_i64(0), entry)
    sb.add_incoming(sb_next, close)
    for phi, start, new in ((m_out, neg_inf8, m_new), (s_out, zero8, total_new), (am_out, neg_inf, am_total)):
        phi.add_incoming(start, entry)
        phi.add_incoming(new, close)

    b = ir.IRBuilder(done)
    m_fin, s_fin, am_fin = b.phi(_V8F), b.phi(_V8F), b.phi(_F32)
    for phi, start, new in ((m_fin, neg_inf8, m_new), (s_fin, zero8, total_new), (am_fin, neg_inf, am_total)):
        phi.add_incoming(start, entry)
        phi.add_incoming(new, close)
    b.ret(_struct(b, [_hmax(b, m_fin), am_fin, _hsum(b, s_fin)]))
    return fn


def _struct(b, values):
    ty = ir.LiteralStructType([v.type for v in values])
    out = ir.Constant(ty, ir.Undefined)
    for i, v in enumerate(values):
        out = b.insert_value(out, v, i)
    return out


_MAX2 = _Reduction(
    "max2",
    init=lambda: [_splat_f(_NEG_INF), _splat_f(_NEG_INF)],
    step=lambda b, x8, pen8, _z, a: [_vmax(b, a[0], x8), _vmax(b, a[1], b.fadd(x8, pen8))],
    finish=lambda b, a: _struct(b, [_hmax(b, a[0]), _hmax(b, a[1])]),
    ret_type=ir.LiteralStructType([_F32, _F32]),
    mask="penalty",
)
_MAXSUM = _Reduction(
    "maxsum",
    init=lambda: [_splat_f(_NEG_INF), _splat_f(0.0)],
    step=lambda b, x8, _m, nz8, a: [_vmax(b, a[0], x8), b.fadd(a[1], _vexp2(b, x8, nz8))],
    finish=lambda b, a: _struct(b, [_hmax(b, a[0]), _hsum(b, a[1])]),
    ret_type=ir.LiteralStructType([_F32, _F32]),
    uses_ref=True,
)
_EXP2SUM = _Reduction(
    "exp2sum",
    init=lambda: [_splat_f(0.0)],
    step=lambda b, x8, _m, nz8, a: [b.fadd(a[0], _vexp2(b, x8, nz8))],
    finish=lambda b, a: _hsum(b, a[0]),
    ret_type=_F32,
    uses_ref=True,
)
_EXP2SUM_MASKED = _Reduction(
    "exp2sum_masked",
    init=lambda: [_splat_f(0.0)],
    step=lambda b, x8, lanes8, nz8, a: [
        b.fadd(a[0], b.bitcast(b.and_(b.bitcast(_vexp2(b, x8, nz8), _V8I32), lanes8), _V8F))
    ],
    finish=lambda b, a: _hsum(b, a[0]),
    ret_type=_F32,
    mask="lanes",
    uses_ref=True,
)


def _lower_reduction(reduction: _Reduction, kind: str, context, builder, sig, args, *, has_mask, has_ref):
    """Call `reduction` from a numba intrinsic; args = (x, off, n8[, mbytes, moff][, zref])."""
    fn = reduction.define(builder.module, kind)
    argtypes = list(sig.args)
    x_ty, off_ty, n8_ty = argtypes[:3]
    x, off, n8 = args[:3]
    call_args = [
        context.make_array(x_ty)(context, builder, value=x).data,
        context.cast(builder, off, off_ty, types.int64),
        context.cast(builder, n8, n8_ty, types.int64),
    ]
    rest, rest_types = list(args[3:]), argtypes[3:]
    if has_mask:
        m_ty, moff_ty = rest_types[:2]
        call_args.append(context.make_array(m_ty)(context, builder, value=rest[0]).data)
        call_args.append(context.cast(builder, rest[1], moff_ty, types.int64))
        rest, rest_types = rest[2:], rest_types[2:]
    else:
        call_args += [ir.Constant(_PTR, None), _i64(0)]
    call_args.append(rest[0] if has_ref else ir.Constant(_F32, 0.0))
    result = builder.call(fn, call_args)
    if isinstance(sig.return_type, types.BaseTuple):
        parts = [builder.extract_value(result, i) for i in range(len(sig.return_type))]
        return context.make_tuple(builder, sig.return_type, parts)
    return result


def _check_mask(mbytes) -> None:
    _check_array(mbytes, "mbytes")
    if mbytes.dtype != types.uint8:
        raise TypeError(f"mbytes must be a uint8 array, got {mbytes}")
