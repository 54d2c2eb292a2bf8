"""Control flow: loops with carried values, run-time trip counts, divergent ifs, while loops."""

from __future__ import annotations

import numpy as np
import tiles
import tiles.language as tl
from tiles.core import dtypes as D

from ..case import Case, case
from ..compare import EXACT
from ..profiles import Profile
from ..values import random_array


@tiles.jit
def control_kernel(x_ptr, out_ptr, trips, KIND: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if KIND == "for_carried":
        acc = x
        total = tl.zeros((BLOCK,), dtype=tl.int32)
        for i in range(trips):
            acc = acc * 3 + i
            total += acc & 1
        r = acc + total
    elif KIND == "for_step":
        acc = x
        for i in range(trips, 2 * trips + 7, 3):
            acc = acc ^ (acc << 1) + i
        r = acc
    elif KIND == "nested":
        acc = x
        for i in range(3):
            for j in range(pid + 1):
                acc = acc + i * j - (acc >> 2)
        r = acc
    elif KIND == "divergent_if":
        if pid % 2 == 0:
            r = x + pid
        else:
            r = x * 2 - pid
    elif KIND == "scalar_if_chain":
        s = tl.sum(x, axis=0)
        if s > 0:
            r = x - 1
        elif s < -100:
            r = x + 1
        else:
            r = -x
    elif KIND == "while":
        acc = x
        count = pid
        while count < trips:
            acc = acc + count
            count += 1
        r = acc
    elif KIND == "static_range":
        acc = x
        for i in tl.static_range(4):
            acc = acc * (i + 1) - i
        r = acc
    else:
        i = 0
        acc = x
        while i < trips + pid:
            acc = tl.where(acc % 2 == 0, acc // 2, 3 * acc + 1)
            i += 1
        r = acc
    tl.store(out_ptr + offs, r)


KINDS = ("for_carried", "for_step", "nested", "divergent_if", "scalar_if_chain", "while", "static_range",
         "collatz_while")


def _case(kind: str, trips: int, block: int, programs: int) -> Case:
    def make(rng: np.random.Generator) -> list:
        x = random_array(rng, D.int32, (programs * block,))
        if kind == "collatz_while":
            x = rng.integers(1, 1000, programs * block).astype(np.int32)
        return [x, np.zeros(programs * block, np.int32), trips]
    return case("control", f"{kind}[trips={trips},block={block},programs={programs}]", control_kernel,
                make, (programs,), {1: EXACT}, constexprs={"KIND": kind, "BLOCK": block})


def cases(profile: Profile) -> list[Case]:
    out = []
    for kind in KINDS:
        for trips in (0, 5):
            for block in profile.shapes[:2]:
                out.append(_case(kind, trips, block, programs=4))
    return out
