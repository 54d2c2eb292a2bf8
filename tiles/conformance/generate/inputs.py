"""Hypothesis strategies for the arrays and scalars a generated kernel is launched with."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tiles.core import dtypes
from tiles.core.dtypes import DType

from ..values import edge_values
from . import sync
from .draws import Draw, choose
from .program import Program

UNUSUAL = (0.0, 0.2, 0.6)


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


def array(draw: Draw, d: DType, size: int) -> np.ndarray:
    """An array drawn as (seed, share of unusual values): two choices for Hypothesis to shrink
    instead of one per element, so shrinking a failing program stays fast."""
    return _values(d, size, draw(st.integers(0, 2**32 - 1)), choose(draw, UNUSUAL))


def _compare_values(mem: np.ndarray, seed: int) -> np.ndarray:
    """A compare-and-swap's expected values: ``mem``'s own value at about half the cells."""
    rng = np.random.default_rng(seed)
    other = _values(dtypes.from_numpy(mem.dtype), mem.size, seed, 0.2)
    return np.where(rng.random(mem.size) < 0.5, mem, other).astype(mem.dtype)


def _filled(d: DType, shape: tuple[int, ...]) -> np.ndarray:
    fill = edge_values(d)[-1]
    return np.full(shape, fill, dtype=np.float64 if d.is_floating else object).astype(d.np)


@st.composite
def launch_args(draw: Draw, program: Program) -> list[Any]:
    """The arguments of ``program``'s kernel, in ``program.params()`` order: (inputs..., each atomic's
    memory, old values [and compare values], out, n_valid, trips, flag, runtime strides...)."""
    m, n, p = program.m, program.n, program.programs
    args: dict[str, Any] = {}
    for i in program.inputs:
        args[f"{i.name}_ptr"] = array(draw, i.dtype, p * i.span(m, n))
        if i.stride_params():
            assert i.strides is not None
            args[f"{i.name}_sr"], args[f"{i.name}_sc"] = i.strides
    for a in program.atomics:
        mem = array(draw, a.dtype, a.cells(program))
        args[f"{a.name}_mem_ptr"] = mem
        # contended: a row of old values per address, compared as a multiset
        args[f"{a.name}_old_ptr"] = _filled(a.dtype, (p * m, n) if a.contended else (p * m * n,))
        if a.kind == "cas":
            args[f"{a.name}_cmp_ptr"] = _compare_values(mem, draw(st.integers(0, 2**32 - 1)))
    args.update(sync.launch_buffers(draw, program, array))
    assert program.output is not None
    args["out_ptr"] = _filled(program.output.dtype, (p * program.out_span(),))
    args["n_valid"] = draw(st.integers(1, p * m * n))
    args["trips"] = draw(st.integers(0, 3))
    args["flag"] = draw(st.integers(-1, 1))
    return [args[name] for name in program.params()]
