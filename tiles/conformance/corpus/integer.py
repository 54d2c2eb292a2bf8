"""Integer edge cases: every pair of edge values through division, modulo, shifts and wraparound."""

from __future__ import annotations

import itertools

import numpy as np

import tiles
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT
from ..profiles import Profile
from ..values import edge_values
from .elementwise import binary_kernel, unary_kernel

SIGNED_PROBES = (-7, -3, -2, -1, 1, 2, 3, 7)


def _operands(d: DType, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of (edge values + small probes), minus the pairs whose result is undefined."""
    values = sorted({int(v) for v in edge_values(d)} |
                    {v for v in SIGNED_PROBES if d.min() <= v <= d.max()})
    pairs = list(itertools.product(values, values))
    if op in ("floordiv", "mod"):
        pairs = [(a, b) for a, b in pairs if b != 0 and not (d.is_signed and a == d.min() and b == -1)]
    if op in ("shl", "shr"):
        pairs = [(a, s) for a in values for s in sorted({0, 1, d.bits // 2, d.bits - 1})]
    x = np.array([p[0] for p in pairs], dtype=d.np)
    y = np.array([p[1] for p in pairs], dtype=d.np)
    return x, y


def _pow2(n: int) -> int:
    return tiles.next_power_of_2(n)


def cases(profile: Profile) -> list[Case]:
    out = []
    ints = profile.sweep((D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64))
    for d in ints:
        for op in ("add", "sub", "mul", "floordiv", "mod", "shl", "shr", "umulhi", "lt", "ge"):
            if op == "umulhi" and d.bits < 32:
                continue
            x, y = _operands(d, op)
            n = x.size
            res = D.int1 if op in ("lt", "ge") else d

            def make(rng, x=x, y=y, n=n, res=res):
                return [x.copy(), y.copy(), np.zeros(n, res.np), n]
            block = min(_pow2(n), 256)
            out.append(case("integer", f"{op}_edges[{d}]", binary_kernel, make,
                            (tiles.cdiv(n, block),), {2: EXACT}, constexprs={"OP": op, "BLOCK": block}))
        for op in ("neg", "abs", "invert"):
            if op in ("neg", "abs") and not d.is_signed and op == "abs":
                continue
            values = np.array(sorted({int(v) for v in edge_values(d)}), dtype=d.np)
            n = values.size

            def make1(rng, v=values, n=n, d=d):
                return [v.copy(), np.zeros(n, d.np), n]
            out.append(case("integer", f"{op}_edges[{d}]", unary_kernel, make1, (1,), {1: EXACT},
                            constexprs={"OP": op, "BLOCK": _pow2(n)}))
    return out
