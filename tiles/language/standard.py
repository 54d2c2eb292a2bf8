"""``tiles.language.standard``: the functions Triton writes on top of its core.

Kernels import from here directly (``from triton.language.standard import
_log2, zeros_like``), so this module keeps Triton's names, private helpers
included.  Most are re-exported from where tiles defines them; the rest are
built from ordinary tile ops, so every backend runs them.
"""

from __future__ import annotations

from typing import Any

from ..core import dtypes as D
from . import semantic as S
from .constexpr import constexpr
from .core import cdiv, join, minimum, ravel, sigmoid, zeros, zeros_like
from .reduction import argmax, argmin, cumprod, cumsum, max, min, reduce, softmax, sort, sum, xor_sum
from .tensor import tensor

__all__ = [
    "argmax", "argmin", "bitonic_merge", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max",
    "min", "ravel", "reduce_or", "sigmoid", "softmax", "sort", "squeeze", "sum", "swizzle2d",
    "topk", "unsqueeze", "xor_sum", "zeros", "zeros_like",
]


def _log2(i: Any) -> constexpr:
    """log2 of a compile-time power of two (``_log2(BLOCK)``)."""
    n = int(S.unwrap(i))
    if n <= 0 or n & (n - 1):
        raise S.error(f"_log2 needs a positive power of two, got {n}")
    return constexpr(n.bit_length() - 1)


def _is_power_of_two(i: Any) -> constexpr:
    n = int(S.unwrap(i))
    return constexpr(n > 0 and n & (n - 1) == 0)


def get_int_dtype(bitwidth: Any, signed: Any) -> D.DType:
    """The integer dtype of this width and signedness (``core.get_int_dtype(32, True)``)."""
    width, sign = int(S.unwrap(bitwidth)), bool(S.unwrap(signed))
    name = f"{'' if sign else 'u'}int{width}"
    if width == 1 or name not in D.BY_NAME:
        raise S.error(f"there is no {'signed' if sign else 'unsigned'} {width}-bit integer type")
    return D.BY_NAME[name]


_get_int_dtype = get_int_dtype


# combine functions kernels pass to tl.reduce / tl.associative_scan by name
def _sum_combine(a: Any, b: Any) -> Any:
    return a + b


def _prod_combine(a: Any, b: Any) -> Any:
    return a * b


def _xor_combine(a: Any, b: Any) -> Any:
    return a ^ b


def _or_combine(a: Any, b: Any) -> Any:
    return a | b


def _elementwise_max(a: Any, b: Any) -> Any:
    from .core import maximum
    return maximum(a, b)


def _elementwise_min(a: Any, b: Any) -> Any:
    return minimum(a, b)


def reduce_or(input: Any, axis: Any, keep_dims: Any = False) -> tensor:
    """Bitwise or of the elements along ``axis``."""
    t = S.to_tensor(input)
    if not t.dtype.is_int:
        raise S.error(f"tl.reduce_or needs integers, got {t.dtype}")
    return reduce(t, axis, _or_combine, keep_dims=keep_dims)


def _smaller(a: Any, b: Any) -> Any:
    return minimum(a, b) if isinstance(a, tensor) or isinstance(b, tensor) else (a if a < b else b)


def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> tuple[Any, Any]:
    """Renumber a row-major ``size_i x size_j`` grid column-major within groups of ``size_g`` rows.

    Used to walk output tiles in an L2-friendly order: the linear index of
    ``(i, j)`` picks a group of ``size_g`` rows (fewer in the last group), and
    inside it consecutive indices go down a column before moving right.
    """
    linear = i * size_j + j
    per_group = size_g * size_j
    first_row = (linear // per_group) * size_g
    rows = _smaller(size_i - first_row, size_g)
    within = linear % per_group
    return first_row + within % rows, within // rows


def _axis_of(x: tensor, dim: Any, what: str) -> int:
    d = S.unwrap(dim)
    d = x.ndim - 1 if d is None else int(d)
    if not -x.ndim <= d < x.ndim:
        raise S.error(f"{what}: dim {d} is out of range for a tile of shape {list(x.shape)}")
    return d + x.ndim if d < 0 else d


def _swap_halves(x: tensor, axis: int) -> tensor:
    """Exchange the two entries of a size-2 ``axis``."""
    order = [a for a in range(x.ndim) if a != axis] + [axis]
    back = sorted(range(x.ndim), key=order.__getitem__)
    lo, hi = S.split(S.permute(x, order))
    return S.permute(join(hi, lo), back)


def flip(x: Any, dim: Any = None) -> tensor:
    """Reverse ``x`` along ``dim`` (the last by default); the length must be a power of two."""
    t = S.to_tensor(x)
    axis = _axis_of(t, dim, "tl.flip")
    n = t.shape[axis]
    if n & (n - 1):
        raise S.error(f"tl.flip needs a power-of-two length along dim {axis}, got {n}")
    if n == 1:
        return t
    bits = n.bit_length() - 1
    # Reversing an index of `bits` bits flips every bit: split the axis into
    # `bits` axes of size 2 and swap the two halves of each.
    split_shape = t.shape[:axis] + (2,) * bits + t.shape[axis + 1:]
    y = S.reshape(t, split_shape)
    for k in range(bits):
        y = _swap_halves(y, axis + k)
    return S.reshape(y, t.shape)


def interleave(a: Any, b: Any) -> tensor:
    """Alternate the elements of ``a`` and ``b`` along their last axis."""
    c = join(a, b)
    if c.ndim == 1:
        return c
    return S.reshape(c, c.shape[:-2] + (2 * c.shape[-2],))


def squeeze(x: Any, dim: Any) -> tensor:
    """Drop the length-1 axis ``dim``."""
    t = S.to_tensor(x)
    axis = _axis_of(t, dim, "tl.squeeze")
    if t.shape[axis] != 1:
        raise S.error(f"tl.squeeze: dim {axis} has length {t.shape[axis]}, not 1")
    return S.reshape(t, t.shape[:axis] + t.shape[axis + 1:])


def unsqueeze(x: Any, dim: Any) -> tensor:
    """Insert a length-1 axis at ``dim``."""
    return S.expand_dims(x, dim)


def topk(x: Any, k: Any, dim: Any = None, descending: Any = True) -> tensor:
    """The ``k`` largest (smallest with ``descending=False``) values along the last axis, in order."""
    t = S.to_tensor(x)
    axis = _axis_of(t, dim, "tl.topk")
    n, kk = t.shape[-1], int(S.unwrap(k))
    if axis != t.ndim - 1:
        raise S.error("tl.topk supports only the last dimension, as in Triton")
    if kk <= 0 or kk & (kk - 1) or kk > n:
        raise S.error(f"tl.topk needs k to be a power of two no larger than {n}, got {kk}")
    down = bool(S.unwrap(descending))
    ordered = sort(t, t.ndim - 1, descending=down)
    # Rows of k consecutive sorted values: row 0 beats every later row column by
    # column, so the column-wise max (min) over rows is row 0.
    rows = S.reshape(ordered, t.shape[:-1] + (n // kk, kk))
    return (max if down else min)(rows, t.ndim - 1)


def bitonic_merge(x: Any, dim: Any = None, descending: Any = False) -> tensor:
    """Triton's bitonic merge step: not supported by tiles, which asks for ``tl.sort`` instead."""
    raise S.error("tl.bitonic_merge is not supported by tiles: its result depends on Triton's "
                  "bitonic network order; use tl.sort (or tl.topk) on the whole axis instead")


def sort_impl(x: Any, k: Any = None, dim: Any = None, descending: Any = False) -> tensor:
    """Triton's shared body of sort and topk: all of the axis when ``k`` is None."""
    if S.unwrap(k) is None:
        return sort(x, dim, descending=descending)
    return topk(x, k, dim, descending=descending)

