"""Reductions, scans, sort, histogram, gather and dot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import attrs as A
from ..core import dtypes as D
from ..core.builder import current
from ..core.ir import TileType, Value
from ..core.kinds import ReduceKind
from ..core.ops import Op
from . import semantic as S
from .tensor import tensor


def _axis(t: tensor, axis: Any) -> int:
    axis = S.unwrap(axis)
    if isinstance(axis, tensor) or not isinstance(axis, int):
        raise S.error(f"axis must be a compile-time integer, got {axis!r}")
    a = axis + t.ndim if axis < 0 else axis
    if not 0 <= a < t.ndim:
        raise S.error(f"axis {axis} is out of range for a tile of shape {list(t.shape)}")
    return a


def _prepare(x: Any, axis: Any) -> tuple[tensor, int]:
    t = S.to_tensor(x)
    if S.unwrap(axis) is None:
        t = S.reshape(t, (t.numel,)) if t.ndim != 1 else t
        return t, 0
    if t.ndim == 0:
        raise S.error("cannot reduce a scalar")
    return t, _axis(t, axis)


def _keep(r: tensor, axis: int, keep_dims: bool, ndim: int, full: bool) -> tensor:
    if not S.unwrap(keep_dims):
        return r
    if full:
        return S.reshape(r, (1,) * ndim)
    return S.expand_dims(r, axis)


def _reduce_kind(x: Any, axis: Any, kind: str, keep_dims: Any, dtype: DTypeArg = None) -> tensor:
    orig = S.to_tensor(x)
    t, ax = _prepare(orig, axis)
    if isinstance(t.dtype, D.PointerType):
        raise S.error("cannot reduce a tile of pointers")
    if dtype is not None:
        t = S.cast(t, dtype)
    (r,) = current().emit(Op.REDUCE, [t.handle], A.Reduce(ax, ReduceKind(kind)))
    return _keep(S.wrap(r), ax, keep_dims, orig.ndim, S.unwrap(axis) is None)


DTypeArg = Any


def sum(input: Any, axis: Any = None, keep_dims: Any = False, dtype: Any = None) -> tensor:  # noqa: A001
    """Sum of ``input`` along ``axis`` (of every element when ``axis`` is None); integers under 32 bits
    sum as 32-bit ones of their signedness, a bool mask as uint32."""
    t = S.to_tensor(input)
    if dtype is None:
        dtype = _sum_type(t.dtype)
    return _reduce_kind(t, axis, "sum", keep_dims, dtype)


def _sum_type(dtype: D.ScalarType) -> D.ScalarType | None:
    """Triton's accumulator for sums and scans: integers under 32 bits widen to 32 keeping their
    signedness (bool counts as unsigned, so ``tl.sum(mask)`` is uint32); None keeps the type."""
    if dtype.is_int and dtype.bits < 32:
        return D.uint32 if dtype.kind is D.Kind.UINT or dtype.is_bool else D.int32
    return None


def xor_sum(input: Any, axis: Any = None, keep_dims: Any = False) -> tensor:
    """Bitwise xor of the integer elements of ``input`` along ``axis``."""
    t = S.to_tensor(input)
    if not t.dtype.is_int:
        raise S.error(f"xor_sum needs an integer tile, got {t.dtype}")
    return _reduce_kind(t, axis, "xor", keep_dims)


def _minmax(kind: str, input: Any, axis: Any, return_indices: Any, tie_break_left: Any,
            keep_dims: Any) -> Any:
    t = S.to_tensor(input)
    if S.unwrap(return_indices):
        if t.dtype.is_bool:
            t = S.cast(t, D.int8)
        return _reduce_kind(t, axis, kind, keep_dims), _arg(kind, t, axis, keep_dims)
    if t.dtype.bits < 32:  # as Triton: values alone reduce narrow types as float32 / int32
        t = S.cast(t, D.float32 if t.dtype.is_floating else D.int32)
    return _reduce_kind(t, axis, kind, keep_dims)


def max(input: Any, axis: Any = None, return_indices: Any = False,  # noqa: A001
        return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    """Largest element along ``axis`` (types under 32 bits as float32/int32); with ``return_indices``
    also where it is, in the input's type."""
    return _minmax("max", input, axis, return_indices, return_indices_tie_break_left, keep_dims)


def min(input: Any, axis: Any = None, return_indices: Any = False,  # noqa: A001
        return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    """Smallest element along ``axis`` (types under 32 bits as float32/int32); with ``return_indices``
    also where it is, in the input's type."""
    return _minmax("min", input, axis, return_indices, return_indices_tie_break_left, keep_dims)


def _arg(kind: str, input: Any, axis: Any, keep_dims: Any) -> tensor:
    orig = S.to_tensor(input)
    t, ax = _prepare(orig, axis)
    if t.dtype.is_bool:
        t = S.cast(t, D.int8)
    (r,) = current().emit(Op.ARGREDUCE, [t.handle], A.ArgReduce(ax, ReduceKind(kind)))
    return _keep(S.wrap(r), ax, keep_dims, orig.ndim, S.unwrap(axis) is None)


def argmax(input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> tensor:
    """Index of the largest element along ``axis`` (the first one on ties)."""
    return _arg("max", input, axis, keep_dims)


def argmin(input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> tensor:
    """Index of the smallest element along ``axis`` (the first one on ties)."""
    return _arg("min", input, axis, keep_dims)


def _combine_region(fn: Callable[..., Any], types: list[TileType]) -> tuple[Any, list[TileType]]:
    """Trace ``fn`` on scalars into a combine region: args (a.., b..) -> yields (r..)."""
    builder = current()
    scalar_types = [TileType(t.dtype) for t in types]
    args = [Value(t) for t in scalar_types + scalar_types]
    with builder.region(args) as block:
        n = len(types)
        wrapped = [S.wrap(a) for a in args]
        out = fn(*wrapped[:n], *wrapped[n:])
        outs = list(out) if isinstance(out, tuple) else [out]
        if len(outs) != n:
            raise S.error(f"the combine function returned {len(outs)} values, expected {n}")
        vals = [S.cast(o, t.dtype) for o, t in zip(outs, scalar_types)]
        block.yields = [v.handle for v in vals]
    return block, types


def _custom(op: Op, input: Any, axis: Any, combine_fn: Any, keep_dims: Any, reverse: bool) -> Any:
    inputs = list(input) if isinstance(input, tuple) else [input]
    tensors = [S.to_tensor(x) for x in inputs]
    shape = tensors[0].shape
    for t in tensors[1:]:
        if t.shape != shape:
            raise S.error(f"all inputs of a reduction must have one shape, got {shape} and {t.shape}")
    flat = S.unwrap(axis) is None
    if flat:
        tensors = [S.reshape(t, (t.numel,)) for t in tensors]
        ax = 0
    else:
        ax = _axis(tensors[0], axis)
    # a @jit combine function is traced as its body is written (`a or b`, `if`s on scalars, ...)
    fn = getattr(combine_fn, "rewritten", combine_fn)
    block, _ = _combine_region(fn, [t.handle.type for t in tensors])
    attrs = A.Reduce(ax, ReduceKind.CUSTOM, reverse)
    if op is Op.REDUCE:
        types = [t.handle.type.with_shape(t.shape[:ax] + t.shape[ax + 1:]) for t in tensors]
    else:
        types = [t.handle.type for t in tensors]
    results = current().emit(op, [t.handle for t in tensors], attrs, types, regions=[block])
    outs = [S.wrap(r) for r in results]
    if op is Op.REDUCE:
        outs = [_keep(o, ax, keep_dims, len(shape), flat) for o in outs]
    return tuple(outs) if isinstance(input, tuple) else outs[0]


def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: Any = False) -> Any:
    """``input`` (a tile or a tuple of tiles) folded along ``axis`` with the associative ``combine_fn``."""
    return _custom(Op.REDUCE, input, axis, combine_fn, keep_dims, False)


def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: Any = False) -> Any:
    """Inclusive prefix combination of ``input`` along ``axis`` with the associative ``combine_fn``."""
    return _custom(Op.SCAN, input, axis, combine_fn, False, bool(S.unwrap(reverse)))


def _scan_kind(kind: str, input: Any, axis: Any, reverse: Any, dtype: Any) -> tensor:
    t = S.to_tensor(input)
    wide = dtype if dtype is not None else _sum_type(t.dtype)
    if wide is not None:
        t = S.cast(t, wide)
    ax = _axis(t, axis)
    (r,) = current().emit(Op.SCAN, [t.handle], A.Reduce(ax, ReduceKind(kind), bool(S.unwrap(reverse))))
    return S.wrap(r)


def cumsum(input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> tensor:
    """Inclusive running sum along ``axis`` (from the end with ``reverse``)."""
    return _scan_kind("sum", input, axis, reverse, dtype)


def cumprod(input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> tensor:
    """Inclusive running product along ``axis`` (from the end with ``reverse``)."""
    return _scan_kind("prod", input, axis, reverse, dtype)


def sort(x: Any, dim: Any = None, descending: Any = False) -> tensor:
    """``x`` sorted along its last axis, ascending or ``descending``."""
    t = S.to_tensor(x)
    d = S.unwrap(dim)
    if d is not None and _axis(t, d) != t.ndim - 1:
        raise S.error("tl.sort sorts along the last axis only; permute the tile first")
    n = t.shape[-1] if t.shape else 0
    if n & (n - 1):
        raise S.error(f"tl.sort needs a power-of-two length, got {n}")
    return S.wrap(current().emit1(Op.SORT, [t.handle], A.Sort(bool(S.unwrap(descending)))))


def histogram(input: Any, num_bins: Any, mask: Any = None) -> tensor:
    """How many elements of the integer tile ``input`` equal each of ``0 .. num_bins - 1`` (int32)."""
    t = S.to_tensor(input)
    bins = S.unwrap(num_bins)
    if not isinstance(bins, int) or bins <= 0:
        raise S.error(f"num_bins must be a positive compile-time integer, got {bins!r}")
    if mask is not None:
        t = S.where(mask, t, -1 if t.dtype.is_signed else bins)  # type: ignore[union-attr,arg-type,assignment]
    return S.wrap(current().emit1(Op.HISTOGRAM, [t.handle], A.Histogram(bins)))


def gather(src: tensor, index: tensor, axis: Any) -> tensor:
    """Elements of ``src`` picked along ``axis`` by ``index`` (like ``numpy.take_along_axis``)."""
    ax = _axis(src, axis)
    return S.wrap(current().emit1(Op.GATHER, [src.handle, index.handle], A.Gather(ax)))


def softmax(x: Any, dim: Any = None, keep_dims: Any = False, ieee_rounding: Any = False) -> tensor:
    """``exp(x - max(x))`` divided by its sum along ``dim`` (the last axis by default)."""
    from .core import exp
    t = S.to_tensor(x)
    axis = t.ndim - 1 if S.unwrap(dim) is None else _axis(t, dim)
    z = t - max(t, axis, keep_dims=True)
    num = exp(z)
    den = sum(num, axis, keep_dims=True)
    return S.truediv(num, den)


def _dot_result_dtype(operand: D.DType, out_dtype: D.DType) -> D.DType:
    """Triton's rule: int8 -> int32, float32 and bfloat16 -> float32, float64 -> float64
    (``out_dtype`` ignored); float16 and fp8 -> ``out_dtype``; never bfloat16."""
    if operand.is_int:
        return D.int32
    if out_dtype == D.bfloat16:
        raise S.error("tl.dot: out_dtype=bfloat16 is unsupported; use float32 or float16 and cast "
                      "with .to(tl.bfloat16)")
    if operand in (D.float32, D.bfloat16):
        return D.float32
    if operand == D.float64:
        return D.float64
    return out_dtype


def dot(input: tensor, other: tensor, acc: tensor | None = None, input_precision: Any = None,
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None,
        out_dtype: Any = D.float32) -> tensor:
    """Matrix product ``input @ other`` of 2D (or batched 3D) tiles, added to ``acc`` when given.
    float32 operands: ``input_precision="tf32"`` (the default, as is ``allow_tf32=True``) rounds
    both inputs to tf32 (10 mantissa bits, nearest even) on every backend, the interpreter
    included; ``"ieee"`` (``allow_tf32=False``) and ``"tf32x3"`` keep the float32 inputs exact.
    """
    a, b = S.to_tensor(input), S.to_tensor(other)
    if a.ndim not in (2, 3) or a.ndim != b.ndim:
        raise S.error(f"tl.dot needs two 2D or two 3D tiles, got {list(a.shape)} and {list(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise S.error(f"tl.dot: inner dimensions differ: {list(a.shape)} @ {list(b.shape)}")
    n = b.shape[-1]
    if D.float8e4b15 in (a.dtype, b.dtype):  # as Triton: float8e4b15 operands are upcast to float16 (exact)
        a, b = S.cast(a, D.float16), S.cast(b, D.float16)
    # any M, N, K >= 1, as Triton's interpreter and AMD backend take (its NVIDIA backend wants
    # K >= 16 for 16-bit operands); shapes the tensor cores cannot take use the generic lowering
    if a.dtype != b.dtype:
        if a.dtype.is_floating and b.dtype.is_floating:
            ctype = D.computation_type(a.dtype, False, b.dtype, False)  # type: ignore[union-attr,arg-type,assignment]
            a, b = S.cast(a, ctype), S.cast(b, ctype)
        else:
            raise S.error(f"tl.dot operands differ in type: {a.dtype} and {b.dtype}")
    prec = S.unwrap(input_precision)
    if prec is None:
        prec = "tf32" if S.unwrap(allow_tf32) in (None, True) else "ieee"
    if prec not in ("tf32", "tf32x3", "ieee"):
        raise S.error(f"input_precision must be 'tf32', 'tf32x3' or 'ieee', got {prec!r}")
    if a.dtype != D.float32:
        prec = "ieee"
    out = _dot_result_dtype(a.dtype, S.as_dtype(out_dtype))  # type: ignore[arg-type]
    shape = (*a.shape[:-1], n)
    if acc is None:
        acc_t = S.const(0, out, shape)
    else:
        acc_t = S.to_tensor(acc)
        if acc_t.shape != shape:
            raise S.error(f"tl.dot accumulator has shape {list(acc_t.shape)}, expected {list(shape)}")
        if acc_t.dtype != out and not a.dtype.is_int:
            if a.dtype in (D.float32, D.bfloat16, D.float64):
                raise S.error(f"tl.dot of {a.dtype} operands accumulates in {out}; the accumulator "
                              f"is {acc_t.dtype}")
            out = acc_t.dtype  # type: ignore[union-attr,arg-type,assignment]
    imprecise = S.unwrap(max_num_imprecise_acc)
    return S.wrap(current().emit1(Op.DOT, [a.handle, b.handle, acc_t.handle],
                                  A.Dot(prec, imprecise)))
