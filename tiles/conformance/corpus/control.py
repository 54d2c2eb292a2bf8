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


@tiles.jit
def reverse_loop_kernel(x_ptr, out_ptr, trips, step, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """``for`` loops that count down (backward scans, reversed block loops): the order of the
    iterations shows in the result (``acc * 3 + i`` does not commute)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    if KIND == "step_minus_one":
        for i in range(trips - 1, -1, -1):
            acc = acc * 3 + i
    elif KIND == "step_minus_three":
        for i in range(2 * trips + 5, trips, -3):
            acc = acc * 3 + i
    elif KIND == "tl_range_down":
        for i in tl.range(trips + pid, 0, -2):
            acc = acc * 3 - i
    else:  # a run-time step: negative here, so the loop runs downward
        for i in range(trips + 4, -trips - 1, step):
            acc = acc * 3 + i
    tl.store(out_ptr + offs, acc)


REVERSE_KINDS = ("step_minus_one", "step_minus_three", "tl_range_down", "runtime_negative_step")


def _reverse_case(kind: str, trips: int, block: int = 16, programs: int = 3) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [random_array(rng, D.int32, (programs * block,)), np.zeros(programs * block, np.int32), trips, -2]
    return case("control", f"{kind}[trips={trips}]", reverse_loop_kernel, make, (programs,), {1: EXACT},
                constexprs={"KIND": kind, "BLOCK": block})


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
    out += [_reverse_case(kind, trips) for kind in REVERSE_KINDS for trips in (0, 5)]
    return out
