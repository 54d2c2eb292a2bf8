"""Math functions on their domains, on domain edges, and on NaN / inf / -0.0 / subnormals."""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType
from tiles.core.ops import Op

from ..case import Case, case
from ..compare import rule_for_ops
from ..profiles import Profile
from ..values import edge_values, finite_array


@tiles.jit
def math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "log":
        r = tl.log(x)
    elif FN == "log2":
        r = tl.log2(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "abs":
        r = tl.abs(x)
    else:
        r = tl.sigmoid(x)
    tl.store(out_ptr + offs, r, mask=m)


# function -> (IR op, interval of ordinary inputs)
FUNCTIONS = {
    "exp": (Op.EXP, (-80.0, 80.0)), "exp2": (Op.EXP2, (-120.0, 120.0)),
    "log": (Op.LOG, (1e-30, 1e30)), "log2": (Op.LOG2, (1e-30, 1e30)),
    "sqrt": (Op.SQRT, (0.0, 1e6)), "rsqrt": (Op.RSQRT, (1e-6, 1e6)),
    "sin": (Op.SIN, (-10.0, 10.0)), "cos": (Op.COS, (-10.0, 10.0)), "erf": (Op.ERF, (-5.0, 5.0)),
    "floor": (Op.FLOOR, (-1e4, 1e4)), "ceil": (Op.CEIL, (-1e4, 1e4)), "abs": (Op.ABS, (-1e4, 1e4)),
    "sigmoid": (Op.EXP, (-20.0, 20.0)),
}


def _inputs(rng: np.random.Generator, d: DType, lo: float, hi: float, n: int) -> np.ndarray:
    log_spaced = lo > 0 and hi / lo > 1e3
    with np.errstate(over="ignore"):  # ranges beyond float16 become inf, an input we want anyway
        if log_spaced:
            x = np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(d.np)
        else:
            x = finite_array(rng, d, (n,), lo, hi)
    edges = np.array(edge_values(d), dtype=np.float64).astype(d.np)
    k = min(len(edges), n // 4)
    x[:k] = edges[:k]
    return x


def cases(profile: Profile) -> list[Case]:
    out = []
    block = max(profile.shapes)
    n = block - 2 if block > 2 else block
    for fn, (op, (lo, hi)) in FUNCTIONS.items():
        for d in profile.sweep((D.float16, D.bfloat16, D.float32, D.float64)):
            def make(rng, d=d, lo=lo, hi=hi):
                return [_inputs(rng, d, lo, hi, n), np.zeros(n, d.np), n]
            rule = rule_for_ops([op, Op.DIV] if fn == "sigmoid" else [op])
            out.append(case("math", f"{fn}[{d}]", math_kernel, make, (tiles.cdiv(n, block),),
                            {1: rule}, constexprs={"FN": fn, "BLOCK": block}))
    return out
