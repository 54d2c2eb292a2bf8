"""``tl.dot`` across shapes, operand dtypes and input precisions.

Float results are compared with ``|got - ref| <= K * eps * (|A| @ |B|) + |acc| * eps``
(plus the tf32 rounding of the inputs); integer dots are exact.
"""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT, tol
from ..profiles import Profile


@tiles.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, WITH_ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if WITH_ACC:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        r = tl.dot(a, b, acc, input_precision=PRECISION)
    else:
        r = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], r)


@tiles.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn[None, None, :])
    tl.store(c_ptr + rb * M * N + rm[None, :, None] * N + rn[None, None, :], tl.dot(a, b))


def _input_eps(d: DType, precision: str) -> float:
    if d == D.float32 and precision == "tf32":
        return 2.0 ** -10
    return 0.0  # products of fp16 / bf16 / fp8 are exact in fp32


def _bounds(d: DType, precision: str, k: int, with_acc: bool):
    acc_eps = 2.0 ** -23 if d != D.float64 else 2.0 ** -52

    def bounds(args: list) -> dict:
        a = np.abs(args[0].astype(np.float64))
        b = np.abs(args[1].astype(np.float64))
        mag = a @ b
        bound = mag * (k * acc_eps + 2 * _input_eps(d, precision))
        if with_acc:
            bound = bound + np.abs(args[2].astype(np.float64)) * acc_eps
        return {2: bound * 2 + 1e-30}
    return bounds


def _dot_case(d: DType, m: int, n: int, k: int, precision: str, with_acc: bool) -> Case:
    out_dtype = D.int32 if d.is_int else (D.float64 if d == D.float64 else D.float32)

    def make(rng: np.random.Generator) -> list:
        if d.is_int:
            a, b = (rng.integers(-128, 128, s).astype(d.np) for s in ((m, k), (k, n)))
            c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
        else:
            a, b = (rng.standard_normal(s).astype(d.np) for s in ((m, k), (k, n)))
            c = rng.standard_normal((m, n)).astype(out_dtype.np)
        return [a, b, c if with_acc else np.zeros((m, n), out_dtype.np)]
    rule = EXACT if d.is_int else tol(0.0)
    name = f"dot[{d},{m}x{k}@{k}x{n},{precision}{',acc' if with_acc else ''}]"
    return case("dot", name, dot_kernel, make, (1,), {2: rule},
                constexprs={"M": m, "N": n, "K": k, "PRECISION": precision, "WITH_ACC": with_acc},
                bounds=None if d.is_int else _bounds(d, precision, k, with_acc))


def cases(profile: Profile) -> list[Case]:
    out = []
    shapes = [(16, 16, 16), (32, 16, 64)] if profile.name == "ci" else \
        [(16, 16, 16), (32, 16, 64), (16, 64, 32), (64, 64, 64), (128, 32, 16)]
    for d in profile.sweep((D.int8, D.float8e4nv, D.float8e5, D.float16, D.bfloat16, D.float32, D.float64)):
        for m, n, k in shapes:
            precisions = ("ieee", "tf32") if d == D.float32 else ("ieee",)
            for precision in precisions:
                for with_acc in (False, True):
                    out.append(_dot_case(d, m, n, k, precision, with_acc))
    for d in profile.sweep((D.float16, D.float32)):
        def make(rng, d=d):
            a = rng.standard_normal((2, 16, 32)).astype(d.np)
            b = rng.standard_normal((2, 32, 16)).astype(d.np)
            return [a, b, np.zeros((2, 16, 16), np.float32)]

        def bounds(args: list) -> dict:
            mag = np.abs(args[0].astype(np.float64)) @ np.abs(args[1].astype(np.float64))
            return {2: mag * (32 * 2.0 ** -23 + 2 * 2.0 ** -10) * 2}
        out.append(case("dot", f"batched_dot[{d},2x16x32@2x32x16]", batched_dot_kernel, make, (1,),
                        {2: tol(0.0)}, constexprs={"B": 2, "M": 16, "N": 16, "K": 32}, bounds=bounds))
    return out
