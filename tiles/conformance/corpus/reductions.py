"""Reductions, scans, arg-reductions, sort, histogram and gather over each axis."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT, EXACT_ZERO_SIGN_FREE, SORTED, eps_of, sum_bound, tol
from ..profiles import Profile
from ..values import random_array


@tiles.jit
def _add_combine(a, b):
    return a + b


@tiles.jit
def _max_pair_combine(a_val, a_idx, b_val, b_idx):
    take_b = (b_val > a_val) | ((b_val == a_val) & (b_idx < a_idx))
    return tl.where(take_b, b_val, a_val), tl.where(take_b, b_idx, a_idx)


@tiles.jit
def reduce_kernel(x_ptr, out_ptr, KIND: tl.constexpr, AXIS: tl.constexpr,
                  M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if KIND == "sum":
        r = tl.sum(x, axis=AXIS)
    elif KIND == "max":
        r = tl.max(x, axis=AXIS)
    elif KIND == "min":
        r = tl.min(x, axis=AXIS)
    elif KIND == "max_with_index":  # values keep a narrow type only next to their indices
        r, _ = tl.max(x, axis=AXIS, return_indices=True)
    elif KIND == "min_with_index":
        r, _ = tl.min(x, axis=AXIS, return_indices=True)
    elif KIND == "xor_sum":
        r = tl.xor_sum(x, axis=AXIS)
    elif KIND == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif KIND == "argmin":
        r = tl.argmin(x, axis=AXIS)
    elif KIND == "custom_sum":
        r = tl.reduce(x, AXIS, _add_combine)
    else:
        idx = tl.broadcast_to(cols[None, :], (M, N))
        _, r = tl.reduce((x, idx), AXIS, _max_pair_combine)
    if AXIS is None:
        tl.store(out_ptr, r)
    elif AXIS == 0:
        tl.store(out_ptr + cols, r)
    else:
        tl.store(out_ptr + rows, r)


@tiles.jit
def scan_kernel(x_ptr, out_ptr, KIND: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    if KIND == "cumsum":
        r = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif KIND == "cumprod":
        r = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    elif KIND == "custom":
        r = tl.associative_scan(x, AXIS, _add_combine, reverse=REVERSE)
    elif KIND == "sort":
        r = tl.sort(x, descending=REVERSE)
    else:
        idx = x.to(tl.int32) & (M * (1 - AXIS) + N * AXIS - 1)
        r = tl.gather(x, idx, AXIS)
    tl.store(out_ptr + offs, r)


@tiles.jit
def histogram_kernel(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))


def _result_dtype(kind: str, d: DType) -> DType:
    if kind.startswith("arg") or kind == "argmax_custom":
        return D.int32
    if kind == "sum" and d.is_int and d.bits < 32:
        return D.uint32 if d.kind is D.Kind.UINT or d.is_bool else D.int32
    if kind in ("max", "min") and d.bits < 32:  # Triton reduces narrow values as float32 / int32
        return D.float32 if d.is_floating else D.int32
    if kind in ("max_with_index", "min_with_index") and d.is_bool:
        return D.int8
    return d


def _no_overflow(x: np.ndarray) -> np.ndarray:
    """Huge finite values replaced: whether a float sum overflows depends on its order."""
    wide = x.astype(np.float64)
    return np.where(np.isfinite(wide) & (np.abs(wide) > 1000), 0.5, wide).astype(x.dtype)


def _reduce_case(kind: str, d: DType, m: int, n: int, axis: int | None) -> Case:
    rd = _result_dtype(kind, d)
    out_shape = () if axis is None else ((n,) if axis == 0 else (m,))

    float_sum = d.is_floating and kind in ("sum", "custom_sum")

    def make(rng: np.random.Generator) -> list:
        x = random_array(rng, d, (m, n), edge_fraction=0.1)
        if float_sum:
            x = _no_overflow(x)
        if kind == "argmax_custom" and d.is_floating:
            x[np.isnan(x.astype(np.float64))] = 0
        return [x, np.zeros(out_shape, rd.np)]
    rule = tol(0.0) if float_sum else (EXACT_ZERO_SIGN_FREE if kind.startswith(("max", "min")) else EXACT)

    def bounds(args: list) -> dict:
        x = args[0].astype(np.float64)
        return {1: sum_bound(x if axis is not None else x.reshape(-1), axis or 0, eps_of(d.np))}
    return case("reduction", f"{kind}[{d},{m}x{n},axis={axis}]", reduce_kernel, make, (1,), {1: rule},
                constexprs={"KIND": kind, "AXIS": axis, "M": m, "N": n},
                bounds=bounds if float_sum else None)


def _scan_case(kind: str, d: DType, m: int, n: int, axis: int, reverse: bool) -> Case:
    rd = _result_dtype("sum", d) if kind in ("cumsum", "cumprod") else d

    float_acc = d.is_floating and kind in ("cumsum", "cumprod", "custom")

    def make(rng: np.random.Generator) -> list:
        if kind == "cumprod" and d.is_floating:
            x = rng.uniform(0.5, 1.5, (m, n)).astype(d.np)
        elif kind == "gather":
            x = rng.integers(0, 100, (m, n)).astype(d.np)
        else:
            x = random_array(rng, d, (m, n), edge_fraction=0.1)
            if float_acc:
                x = _no_overflow(x)
        return [x, np.zeros((m, n), rd.np)]
    rule = tol(4 * eps_of(d.np) if kind == "cumprod" else 0.0) if float_acc else \
        (SORTED if kind == "sort" else EXACT)

    def bounds(args: list) -> dict:
        x = np.abs(args[0].astype(np.float64))
        steps = np.flip(x, axis) if reverse else x
        if kind == "cumprod":
            # each step of a product rounded as it goes (Triton's) adds eps/2 of the partial product, or
            # half the smallest subnormal where that is more: bounded along the path, twice over
            tiny = float(ml_dtypes.finfo(d.np).smallest_subnormal)
            partial = np.cumprod(steps, axis=axis)
            err = 2 * partial * np.cumsum(eps_of(d.np) + tiny / np.maximum(partial, tiny), axis=axis)
        else:
            err = np.cumsum(steps, axis=axis) * (x.shape[axis] * eps_of(d.np))
        return {1: np.flip(err, axis) if reverse else err}
    return case("reduction", f"{kind}[{d},{m}x{n},axis={axis},reverse={reverse}]", scan_kernel, make,
                (1,), {1: rule}, constexprs={"KIND": kind, "AXIS": axis, "REVERSE": reverse, "M": m, "N": n},
                bounds=bounds if float_acc else None)


def cases(profile: Profile) -> list[Case]:
    out = []
    dtypes = profile.sweep((D.int1, D.int8, D.int32, D.uint32, D.int64, D.float16, D.bfloat16,
                            D.float32, D.float64))
    for m, n in profile.shapes_2d:
        for d in dtypes:
            for kind in ("sum", "max", "min", "xor_sum", "argmax", "argmin", "custom_sum", "argmax_custom"):
                if (kind == "xor_sum" and not d.is_int) or (d.is_bool and kind not in ("max", "min", "sum")):
                    continue
                for axis in (0, 1, None):
                    out.append(_reduce_case(kind, d, m, n, axis))
            if d.bits < 32:  # narrow values reduce in their own type only next to their indices
                out += [_reduce_case(kind, d, m, n, 1) for kind in ("max_with_index", "min_with_index")]
            for kind in ("cumsum", "cumprod", "custom", "sort", "gather"):
                if d.is_bool or (kind == "cumprod" and d.is_int and d.bits < 32):
                    continue
                for axis in (0, 1):
                    if kind == "sort" and axis == 0:
                        continue
                    for reverse in (False, True):
                        if kind == "gather" and reverse:
                            continue
                        out.append(_scan_case(kind, d, m, n, axis, reverse))
    for d in profile.sweep((D.int32, D.uint8, D.int64)):
        def make_hist(rng, d=d):
            return [rng.integers(0, 40, 64).astype(d.np), np.zeros(32, np.int32)]
        out.append(case("reduction", f"histogram[{d}]", histogram_kernel, make_hist, (1,), {1: EXACT},
                        constexprs={"N": 64, "BINS": 32}))
    return out
