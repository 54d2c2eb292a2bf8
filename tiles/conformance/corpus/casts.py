"""Conversions between every pair of element types, bitcasts, and rounding modes."""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT
from ..profiles import Profile
from ..values import random_array


@tiles.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if MODE == "bitcast":
        r = x.to(DST, bitcast=True)
    elif MODE == "rtz":
        r = x.to(DST, fp_downcast_rounding="rtz")
    else:
        r = x.to(DST)
    tl.store(out_ptr + offs, r, mask=m)


def _in_range_for(dst: DType, x: np.ndarray, src: DType) -> np.ndarray:
    """Float inputs limited to values a cast to integer ``dst`` defines (no NaN, no overflow)."""
    wide = x.astype(np.float64)
    lo, hi = float(dst.min()), float(dst.max())
    wide = np.where(np.isfinite(wide), wide, 0.0)
    wide = np.trunc(wide)
    wide = np.where((wide > lo) & (wide < hi), wide, np.fmod(wide, 100.0))
    if not dst.is_signed:
        wide = np.abs(wide)
    return wide.astype(src.np)


def _cast_case(src: DType, dst: DType, mode: str, n: int, block: int, saturate: bool = False) -> Case:
    def make(rng: np.random.Generator) -> list:
        x = random_array(rng, src, (n,), scale=1000.0 if dst.is_int else 8.0)
        if src.is_floating and dst.is_int and not dst.is_bool and not saturate:
            x = _in_range_for(dst, x, src)
        if saturate:
            x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 2.5] * (n // 8 + 1),
                         dtype=np.float32)[:n].astype(src.np)
        return [x, np.zeros(n, dst.np), n]
    label = f"{mode}[{src}->{dst}]" if not saturate else f"saturating_float_to_int[{src}->{dst}]"
    return case("casts", label, cast_kernel, make, (tiles.cdiv(n, block),), {1: EXACT},
                constexprs={"DST": dst, "MODE": mode, "BLOCK": block})


def cases(profile: Profile) -> list[Case]:
    block = profile.shapes[-1]
    n = block - 1 if block > 1 else 1
    out = []
    for src in profile.dtypes:
        for dst in profile.dtypes:
            if src != dst:
                out.append(_cast_case(src, dst, "convert", n, block))
    for src in profile.dtypes:
        for dst in profile.dtypes:
            if src != dst and src.bits == dst.bits and not src.is_bool:
                out.append(_cast_case(src, dst, "bitcast", n, block))
    for src in profile.sweep((D.float32, D.float64)):
        for dst in profile.sweep((D.float16, D.bfloat16, D.float8e4nv, D.float8e5)):
            out.append(_cast_case(src, dst, "rtz", n, block))
    for dst in profile.sweep((D.int8, D.int32, D.uint32, D.int64)):
        out.append(_cast_case(D.float32, dst, "convert", n, block, saturate=True))
    return out
