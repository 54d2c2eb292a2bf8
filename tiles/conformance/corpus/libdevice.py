"""libdevice math functions (core/mathfns.py): every row, float32 and float64, on random
inputs from the function's domain plus NaN, +-inf, +-0, subnormals and the extremes.

One kernel per (operand kinds, dtype, group) applies many functions, one row of a 2D array
each, so a backend compiles a handful of kernels rather than one per function.  Each row is
checked against its documented bound (``ulp`` ulp of the reference plus ``atol`` epsilons);
exact rows bit for bit.  The ``fast_*`` functions form their own group so a backend that
declares them approximate (``Target.approximate`` by function name) is held to that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.opencl import mathfns as opencl_math
from tiles.core import dtypes as D
from tiles.core import mathfns
from tiles.core.dtypes import DType
from tiles.core.mathfns import MathFunction
from tiles.language.extra import libdevice

from ..case import Case, case
from ..compare import EXACT, tol
from ..profiles import Profile
from ..values import edge_values


@tiles.jit
def libdevice_map(x_ptr, y_ptr, out_ptr, n, NAMES: tl.constexpr, BINARY: tl.constexpr,
                  BLOCK: tl.constexpr):
    """out[i, :n] = NAMES[i](x[i, :n] [, y[i, :n]]) converted to out's dtype."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    for i in tl.static_range(len(NAMES)):
        fn = getattr(libdevice, NAMES[i])
        x = tl.load(x_ptr + i * n + offs, mask=m)
        if BINARY:
            r = fn(x, tl.load(y_ptr + i * n + offs, mask=m))
        else:
            r = fn(x)
        tl.store(out_ptr + i * n + offs, r.to(out_ptr.dtype.element_ty), mask=m)


def groups(dtype: DType) -> dict[str, list[MathFunction]]:
    """Functions that apply to ``dtype``, by kernel: (operand kinds, exact / inexact / fast)."""
    out: dict[str, list[MathFunction]] = {}
    for fn in mathfns.ROWS:
        if dtype.is_int != (fn.operands[0] == "n") or dtype == D.float64 and fn.f32_only:
            continue
        kind = "fast" if fn.name.startswith("fast_") else "exact" if fn.exact else "inexact"
        if not opencl_math.available(fn, dtype):
            kind += "-no_opencl"  # apart, so that OpenCL runs the rest of the group
        out.setdefault(f"{fn.operands}-{kind}", []).append(fn)
    return out


def _floats(rng: np.random.Generator, d: DType, lo: float, hi: float, n: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        if lo > 0 and hi / lo > 1e3:
            x = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        else:
            x = rng.uniform(lo, hi, n)
        # halves and integers (rounding ties) for a quarter of the ordinary values
        x[: n // 4] = np.round(x[: n // 4] * 2) / 2
        x = x.astype(d.np)
    edges = np.array(edge_values(d), dtype=np.float64).astype(d.np)
    k = min(len(edges), n // 3)
    x[n - k:] = edges[:k]
    return x


def inputs(rng: np.random.Generator, fns: list[MathFunction], d: DType, n: int) -> tuple[np.ndarray, np.ndarray]:
    """x and y of shape (len(fns), n); y is int32 for ``fi`` functions, unused for unary ones."""
    if d.is_int:
        info = np.iinfo(d.np)
        x = rng.integers(info.min, info.max, (len(fns), n), dtype=d.np, endpoint=True)
        edges = np.array([0, 1, -1, info.min, info.max, 1 << (d.bits - 2)], dtype=np.int64).astype(d.np)
        k = min(len(edges), n)
        x[:, :k] = edges[:k]
        return x, x.copy()
    xs, ys = [], []
    for fn in fns:
        lo, hi = fn.domain
        x = _floats(rng, d, lo, hi, n)
        if fn.name.startswith("fast_"):  # accurate only inside the domain: keep NaN, +-inf, +-0 there
            odd = np.isfinite(x) & (x != 0) & ((x < lo) | (x > hi))
            x[odd] = rng.uniform(lo, hi, int(odd.sum())).astype(d.np)
        xs.append(x)
        if fn.operands == "fi":
            ys.append(rng.integers(-40, 40, n).astype(np.int32))
        else:
            y = rng.permutation(_floats(rng, d, lo, hi, n))  # specials meet ordinary values and each other
            if fn.name == "fast_powf":  # exp2(y * log2 x): pow's special cases (inf, 0) do not hold
                for v in (x, y):
                    odd = ~np.isfinite(v) | (v == 0) | (v < lo) | (v > hi)
                    v[odd] = rng.uniform(lo, hi, int(odd.sum())).astype(d.np)
            ys.append(y)
    x = np.stack(xs)
    y = np.stack(ys)
    return x, y


def _bound(fns: list[MathFunction], d: DType):
    """Per-element absolute bound: ulp * spacing(ref) + atol * eps, around the row's reference."""
    def bounds(args: list[Any]) -> dict[int, np.ndarray]:
        x, y = args[0], args[1]
        rows = []
        for i, fn in enumerate(fns):
            with np.errstate(all="ignore"):
                wide = [x[i].astype(np.float64)] + ([y[i].astype(np.float64)] if len(fn.operands) == 2 else [])
                if fn.operands == "fi":
                    wide[1] = y[i]
                if fn.native:
                    wide = [x[i], y[i]][: len(fn.operands)]
                ref = np.asarray(fn.ref(*wide)).astype(d.np)
                ulps, atol = fn.ulp, fn.atol
                if d == D.float64:
                    ulps, atol = ulps + fn.ref_error64[0], atol + fn.ref_error64[1]
                b = ulps * np.spacing(np.abs(np.where(np.isfinite(ref), ref, 0).astype(d.np)))
            rows.append(b.astype(np.float64) + atol * float(np.finfo(d.np).eps))
        return {2: np.stack(rows)}
    return bounds


def cases(profile: Profile) -> list[Case]:
    out = []
    block = max(profile.shapes)
    n = block - 3 if block > 8 else block
    for d in (D.float32, D.float64, D.int32, D.int64):
        for group, fns in groups(d).items():
            names = tuple(fn.name for fn in fns)
            binary = len(fns[0].operands) == 2

            def make(rng, fns=fns, d=d):
                x, y = inputs(rng, fns, d, n)
                return [x, y, np.zeros(x.shape, np.int64 if d.is_int else d.np), n]

            extra: dict[str, Any] = {}
            if "-inexact" in group:
                rule, extra["bounds"] = tol(0.0), _bound(fns, d)
            elif "-fast" in group:
                eps = float(np.finfo(d.np).eps)
                rule = tol(max(fn.ulp for fn in fns) * eps, max(fn.atol for fn in fns) * eps)
            else:
                rule = EXACT
            out.append(case("libdevice", f"{group}[{d}]", libdevice_map, make, (tiles.cdiv(n, block),),
                            {2: rule}, constexprs={"NAMES": names, "BINARY": binary, "BLOCK": block},
                            **extra))
    return out
