"""Shape ops: permute, reshape, expand/broadcast, join/split, cat: pure data movement (bit-exact)."""

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
def shape_kernel(x_ptr, out_ptr, KIND: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    flat = tl.arange(0, M * N)
    if KIND == "trans":
        tl.store(out_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    elif KIND == "permute":
        tl.store(out_ptr + cols[:, None] * M + rows[None, :], tl.permute(x, (1, 0)))
    elif KIND == "reshape":
        tl.store(out_ptr + flat, tl.reshape(x, (M * N,)))
    elif KIND == "reshape_3d":
        y = tl.reshape(x, (M, N // 2, 2))
        y3 = tl.arange(0, M)[:, None, None] * N + tl.arange(0, N // 2)[None, :, None] * 2 \
            + tl.arange(0, 2)[None, None, :]
        tl.store(out_ptr + y3, y)
    elif KIND == "ravel":
        tl.store(out_ptr + flat, tl.ravel(x))
    elif KIND == "broadcast_row":
        first = tl.load(x_ptr + cols)
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.broadcast_to(first[None, :], (M, N)))
    elif KIND == "expand_dims":
        first = tl.load(x_ptr + rows * N)
        e = tl.expand_dims(first, 1)
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], x + e * 0 + e - e)
    elif KIND == "join_split":
        a, b = tl.split(tl.join(x, x + 1))
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.where(cols[None, :] % 2 == 0, a, b))
    elif KIND == "split_pairs":
        a, b = tl.split(tl.reshape(x, (M, N // 2, 2)))
        tl.store(out_ptr + rows[:, None] * N + tl.arange(0, N // 2)[None, :], a)
        tl.store(out_ptr + rows[:, None] * N + N // 2 + tl.arange(0, N // 2)[None, :], b)
    else:
        top = tl.load(x_ptr + tl.arange(0, M * N // 2))
        bottom = tl.load(x_ptr + M * N // 2 + tl.arange(0, M * N // 2))
        tl.store(out_ptr + flat, tl.cat(bottom, top, can_reorder=False))


KINDS = ("trans", "permute", "reshape", "reshape_3d", "ravel", "broadcast_row", "expand_dims",
         "join_split", "split_pairs", "cat")


def _shape_case(kind: str, d: DType, m: int, n: int) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [random_array(rng, d, (m, n)), np.zeros((m, n), d.np)]
    return case("shape", f"{kind}[{d},{m}x{n}]", shape_kernel, make, (1,), {1: EXACT},
                constexprs={"KIND": kind, "M": m, "N": n})


def cases(profile: Profile) -> list[Case]:
    out = []
    for m, n in profile.shapes_2d:
        if n < 2:
            continue
        for d in profile.sweep((D.int8, D.int32, D.int64, D.float16, D.bfloat16, D.float32, D.float64)):
            for kind in KINDS:
                if kind in ("expand_dims", "join_split") and d.is_floating:
                    continue
                out.append(_shape_case(kind, d, m, n))
    return out
