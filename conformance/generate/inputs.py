"""Hypothesis strategies for the arrays and scalars a generated kernel is launched with."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tiles.core.dtypes import DType

from ..values import edge_values
from .program import Program
from .strategies import Draw


def elements(d: DType) -> st.SearchStrategy[Any]:
    edges = st.sampled_from(edge_values(d))
    if d.is_bool:
        return st.booleans()
    if d.is_int:
        return st.one_of(edges, st.integers(-100, 100).filter(lambda v: d.min() <= v <= d.max()),
                         st.integers(int(d.min()), int(d.max())))
    width = 16 if d.name == "float16" else 32
    return st.one_of(edges.map(float), st.floats(-100, 100, width=width),
                     st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True))


def array(d: DType, size: int) -> st.SearchStrategy[np.ndarray]:
    native = d.np if d.name not in ("bfloat16",) else np.dtype(np.float32)
    return hnp.arrays(native, (size,), elements=elements(d)).map(lambda a: a.astype(d.np))


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
