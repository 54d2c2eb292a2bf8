"""Input values: random arrays sprinkled with each dtype's edge values."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tiles.core.dtypes import DType


def edge_values(dtype: DType) -> list[float | int | bool]:
    """NaN, +-inf, -0.0, subnormals and extremes for floats; min, max, 0, +-1 for ints."""
    if dtype.is_bool:
        return [False, True]
    if dtype.is_int:
        lo, hi = int(dtype.min()), int(dtype.max())
        return sorted({lo, lo + 1, -1 if lo < 0 else 2, 0, 1, hi - 1, hi})
    info = ml_dtypes.finfo(dtype.np)
    values = [0.0, -0.0, 1.0, -1.0, float(info.max), float(info.min), float(info.tiny),
              float(info.smallest_subnormal), -float(info.smallest_subnormal), float("nan"), 0.5]
    if dtype.name != "float8e4nv":  # e4m3fn has no infinities
        values += [float("inf"), float("-inf")]
    return values


def random_values(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...],
                  scale: float = 8.0) -> np.ndarray:
    """Ordinary values: the whole range for narrow ints, +-scale-ish for floats and wide ints."""
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.is_int:
        lo, hi = int(dtype.min()), int(dtype.max())
        if dtype.bits <= 16:
            return rng.integers(lo, hi, shape, endpoint=True).astype(dtype.np)
        span = 1 << 20
        small = rng.integers(max(lo, -span), min(hi, span), shape)
        wide = rng.integers(lo, hi, shape, endpoint=True, dtype=dtype.np)
        return np.where(rng.random(shape) < 0.7, small, wide).astype(dtype.np)
    return (rng.standard_normal(shape) * scale).astype(dtype.np)


def random_array(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...],
                 edge_fraction: float = 0.25, scale: float = 8.0) -> np.ndarray:
    out = random_values(rng, dtype, shape, scale)
    flat = out.reshape(-1)
    edges = np.array(edge_values(dtype), dtype=np.float64 if dtype.is_floating else object)
    pick = rng.random(flat.shape) < edge_fraction
    for i in np.flatnonzero(pick):
        flat[i] = edges[rng.integers(len(edges))]
    return out


def finite_array(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...],
                 lo: float, hi: float) -> np.ndarray:
    """Floats uniform in [lo, hi) (for math functions and sums with meaningful bounds)."""
    return rng.uniform(lo, hi, shape).astype(dtype.np)
