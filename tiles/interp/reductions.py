"""Rules of the ops that combine along an axis: REDUCE, ARGREDUCE, SCAN, SORT,
HISTOGRAM, GATHER and DOT.

* float sum/prod reductions and scans compute in float64 and round once to the
  result type; integers wrap around; int1 sum is xor (one-bit wraparound).
* max/min ignore NaN (NaN only if every element is NaN); max_nan/min_nan propagate.
* custom combines run their region on whole arrays: a reduction is a balanced
  tree that keeps operand order (combine(x[2i], x[2i+1]), ...), a scan is
  Hillis-Steele (x[i] = combine(x[i-d], x[i])); a reverse scan is flip, scan, flip.
* DOT computes in float64 (exact products, one rounding of the float64 sum to the
  accumulator type; float64 operands: numpy's float64 matmul); tf32 first rounds
  fp32 inputs to 10 mantissa bits (nearest even); tf32x3 and ieee use the fp32
  inputs as they are; int8 sums exactly and wraps to the int32 accumulator.
* SORT is stable (equal keys, i.e. -0.0 and +0.0 or NaNs, keep their order, in
  either direction) with NaN greater than every number; elements keep their bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core import dtypes, floats
from ..core.attrs import ArgReduce, Reduce
from ..core.errors import KernelRuntimeError
from ..core.ir import Instr
from ..core.kinds import ReduceKind
from ..core.ops import Op
from ..core.semantics import broadcast_shape, convert, dtype_of, round_back, widen
from .context import Ctx
from .programs import Programs

Rule = Callable[[Ctx, Instr, list[np.ndarray]], Sequence[np.ndarray]]
REDUCTION_RULES: dict[Op, Rule] = {}
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _rule(op: Op) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        REDUCTION_RULES[op] = fn
        return fn
    return register


def _lead(*arrays: np.ndarray) -> list[np.ndarray]:
    n = max(a.shape[0] for a in arrays)
    return [a if a.shape[0] == n else np.broadcast_to(a, (n, *a.shape[1:])) for a in arrays]


def _small_float(x: np.ndarray) -> bool:
    d = dtype_of(x)
    return d.is_floating and d.bits < 32


_UFUNC: dict[ReduceKind, np.ufunc] = {
    ReduceKind.MAX: np.fmax, ReduceKind.MIN: np.fmin, ReduceKind.MAX_NAN: np.maximum,
    ReduceKind.MIN_NAN: np.minimum, ReduceKind.XOR: np.bitwise_xor, ReduceKind.AND: np.bitwise_and,
    ReduceKind.OR: np.bitwise_or}


def _builtin(kind: ReduceKind, x: np.ndarray, axis: int, scan: bool) -> np.ndarray:
    d = dtype_of(x)
    if kind in ("sum", "prod") and d.is_floating:
        x64 = widen(x).astype(_F64)
        if kind == "sum":
            r = np.cumsum(x64, axis) if scan else np.sum(x64, axis)
        else:
            r = np.cumprod(x64, axis) if scan else np.prod(x64, axis)
        return floats.narrow(r, d)
    if d.is_bool and kind in ("sum", "prod"):
        kind = ReduceKind.XOR if kind == "sum" else ReduceKind.AND
    if kind == "sum":
        return np.cumsum(x, axis, dtype=x.dtype) if scan else np.sum(x, axis, dtype=x.dtype)
    if kind == "prod":
        return np.cumprod(x, axis, dtype=x.dtype) if scan else np.prod(x, axis, dtype=x.dtype)
    ufunc = _UFUNC[kind]
    xs = floats.quiet_nans(widen(x) if _small_float(x) else x)
    r = ufunc.accumulate(xs, axis) if scan else ufunc.reduce(xs, axis)
    return round_back(r, x.dtype) if xs is not x else r  # max/min: exact


def _combine(ctx: Ctx, instr: Instr, left: list[np.ndarray], right: list[np.ndarray]
             ) -> list[np.ndarray]:
    """Run the custom combine region elementwise over arrays of any one shape."""
    block = instr.regions[0]
    shape = left[0].shape
    env = {}
    for v in ctx.launch.free_vars(block):
        if ctx.env[v].shape[0] != 1:
            raise NotImplementedError(f"{instr.op.value}: a combine region that uses values that "
                                      "differ between programs is not supported by the interpreter")
        env[v] = ctx.env[v]
    flat = [np.ascontiguousarray(a).reshape(-1) for a in (*left, *right)]
    n = flat[0].shape[0]
    # the element pairs act as programs (so an IF inside the combine can split them),
    # each with the id of the program it belongs to
    rows = shape[0]
    owners = ctx.progs.linear if rows == ctx.P else ctx.progs.linear[:rows]
    lanes = Ctx(Programs(np.repeat(owners, n // max(1, rows)), ctx.progs.grid), ctx.launch, env)
    out = ctx.launch.run_region(lanes, block, env, flat)
    return [np.broadcast_to(r, (n,)).reshape(shape) if r.shape[0] != n else r.reshape(shape)
            for r in out]


def _tree(ctx: Ctx, instr: Instr, xs: list[np.ndarray]) -> list[np.ndarray]:
    """Reduce the last axis with the custom combine, keeping operand order."""
    while xs[0].shape[-1] > 1:
        n = xs[0].shape[-1]
        h = n // 2
        out = _combine(ctx, instr, [x[..., 0:2 * h:2] for x in xs], [x[..., 1:2 * h:2] for x in xs])
        if n % 2:
            out = [np.concatenate((o, x[..., -1:]), axis=-1) for o, x in zip(out, xs)]
        xs = out
    return [x[..., 0] for x in xs]


def _hillis_steele(ctx: Ctx, instr: Instr, xs: list[np.ndarray]) -> list[np.ndarray]:
    n = xs[0].shape[-1]
    d = 1
    while d < n:
        tail = _combine(ctx, instr, [x[..., : n - d] for x in xs], [x[..., d:] for x in xs])
        xs = [np.concatenate((x[..., :d], t.astype(x.dtype, copy=False)), axis=-1)
              for x, t in zip(xs, tail)]
        d *= 2
    return xs


def _custom(ctx: Ctx, instr: Instr, args: list[np.ndarray], scan: bool) -> list[np.ndarray]:
    a: Reduce = instr.attrs
    ax = a.axis + 1
    xs = [np.moveaxis(x, ax, -1) for x in _lead(*args)]
    if not scan:
        return _tree(ctx, instr, xs)
    if a.reverse:
        xs = [np.flip(x, -1) for x in xs]
    out = _hillis_steele(ctx, instr, xs)
    if a.reverse:
        out = [np.flip(x, -1) for x in out]
    return [np.moveaxis(x, -1, ax) for x in out]


@_rule(Op.REDUCE)
def _reduce(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Reduce = instr.attrs
    if a.kind is ReduceKind.CUSTOM:
        return _custom(ctx, instr, args, scan=False)
    return [_builtin(a.kind, x, a.axis + 1, scan=False) for x in args]


@_rule(Op.SCAN)
def _scan(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Reduce = instr.attrs
    if a.kind is ReduceKind.CUSTOM:
        return _custom(ctx, instr, args, scan=True)
    ax = a.axis + 1
    out = []
    for x in args:
        if a.reverse:
            x = np.flip(x, ax)
        r = _builtin(a.kind, x, ax, scan=True)
        out.append(np.flip(r, ax) if a.reverse else r)
    return out


@_rule(Op.ARGREDUCE)
def _argreduce(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: ArgReduce = instr.attrs
    (x,) = args
    ax = a.axis + 1
    xs = floats.quiet_nans(widen(x) if _small_float(x) else x)
    best = (np.fmax if a.kind is ReduceKind.MAX else np.fmin).reduce(xs, ax, keepdims=True)
    return (np.argmax(xs == best, axis=ax).astype(np.int32),)


@_rule(Op.SORT)
def _sort(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    """Stable: equal keys (-0.0 and +0.0, NaNs) keep their order, whichever the direction;
    NaN is greater than every number.  Elements are moved, not converted (bits kept)."""
    (x,) = args
    if instr.attrs.descending:  # flip, sort stably ascending, flip: ties stay in order
        return (np.flip(_stable_sort(np.flip(x, -1)), -1),)
    return (_stable_sort(x),)


def _stable_sort(x: np.ndarray) -> np.ndarray:
    keys = widen(x) if _small_float(x) else x
    return np.take_along_axis(x, np.argsort(keys, axis=-1, kind="stable"), axis=-1)


@_rule(Op.HISTOGRAM)
def _histogram(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    (x,) = args
    bins = instr.attrs.bins
    rows = x.shape[0]
    valid = (x >= 0) & (x < bins)
    idx = x.astype(np.int64) + (np.arange(rows, dtype=np.int64) * bins)[:, None]
    counts = np.bincount(idx[valid], minlength=rows * bins)
    return (counts.reshape(rows, bins).astype(np.int32),)


@_rule(Op.GATHER)
def _gather(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    src, index = _lead(*args)
    ax = instr.attrs.axis + 1
    n = src.shape[ax]
    bad = (index < 0) | (index >= n)
    if bad.any():
        j = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
        raise KernelRuntimeError(
            f"gather in kernel '{ctx.launch.kernel.name}', {ctx.progs.describe(j)}: index "
            f"{int(index[j][bad[j]][0])} is out of range for axis {ax - 1} of size {n}", instr.loc)
    return (np.take_along_axis(src, index.astype(np.int64), axis=ax),)


@_rule(Op.DOT)
def _dot(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a, b, acc = args
    out = dtype_of(acc)
    da = dtype_of(a)
    if da.is_int:
        if da.bits <= 16:  # exact in float64 for any realistic K
            prod = np.matmul(a.astype(_F64), b.astype(_F64)).astype(np.int64)
        else:
            prod = np.matmul(a.astype(np.int64), b.astype(np.int64))
        with np.errstate(all="ignore"):
            return ((prod + acc.astype(np.int64)).astype(acc.dtype),)
    if instr.attrs is not None and instr.attrs.input_precision == "tf32" and da == dtypes.float32:
        a, b = floats.round_tf32(a), floats.round_tf32(b)
    with np.errstate(all="ignore"):
        r = np.matmul(widen(a).astype(_F64), widen(b).astype(_F64))
        r = np.add(r, acc, out=r) if r.shape == broadcast_shape(r.shape, acc.shape) else r + acc
    if out.is_int:
        return (convert(r, out),)
    return (floats.narrow(r, out),)
