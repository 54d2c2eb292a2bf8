"""Hypothesis strategies for the arrays and scalars a generated kernel is launched with."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from tiles.core.dtypes import DType

from ..values import edge_values
from .program import Program
from .strategies import Draw


def _values(d: DType, size: int, seed: int, unusual: float) -> np.ndarray:
    """``size`` values of ``d`` from a seed: mostly small numbers, a share ``unusual`` of them
    edge values (NaN, +-inf, -0.0, subnormals, int min/max) or arbitrary bit patterns."""
    rng = np.random.default_rng(seed)
    if d.is_bool:
        return rng.integers(0, 2, size).astype(np.bool_)
    if d.is_int:
        small = rng.integers(max(int(d.min()), -100), min(int(d.max()), 100), size, endpoint=True)
        wide = rng.integers(int(d.min()), int(d.max()), size, dtype=d.np, endpoint=True)
        values = small.astype(d.np)
    else:
        values = rng.uniform(-100, 100, size).astype(d.np)
        bits = np.dtype(f"u{d.itemsize}")
        wide = rng.integers(0, np.iinfo(bits).max, size, dtype=bits, endpoint=True).view(d.np)
    pick = rng.random(size)
    with np.errstate(invalid="ignore", over="ignore"):
        edges = np.array(edge_values(d)).astype(d.np)
    values = np.where(pick < unusual / 2, rng.choice(edges, size), values)
    return np.where((pick >= unusual / 2) & (pick < unusual), wide, values).astype(d.np)


def array(d: DType, size: int) -> st.SearchStrategy[np.ndarray]:
    """Arrays drawn as (seed, share of unusual values): two choices for Hypothesis to shrink
    instead of one per element, so shrinking a failing program stays fast."""
    return st.builds(_values, st.just(d), st.just(size), st.integers(0, 2**32 - 1),
                     st.sampled_from([0.0, 0.2, 0.6]))


@st.composite
def launch_args(draw: Draw, program: Program) -> list[Any]:
    """(inputs..., out, n_valid, trips, flag) for ``program``'s kernel signature."""
    total = program.programs * program.m * program.n
    arrays = [draw(array(d, total)) for _, d, *_ in program.inputs]
    out_dtype = program.output.dtype if program.output else None
    assert out_dtype is not None
    fill = edge_values(out_dtype)[-1]
    out = np.full(total, fill, dtype=np.float64 if out_dtype.is_floating else object).astype(out_dtype.np)
    n_valid = draw(st.integers(1, total))
    trips = draw(st.integers(0, 3))
    flag = draw(st.integers(-1, 1))
    return [*arrays, out, n_valid, trips, flag]
