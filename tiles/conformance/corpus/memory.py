"""Loads and stores: masks, ``other``, strides, scalars, block pointers, tensor descriptors."""

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
def masked_copy_kernel(x_ptr, out_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if KIND == "other":
        x = tl.load(x_ptr + offs, mask=m, other=-5)
        tl.store(out_ptr + offs, x, mask=offs < n + 0 * BLOCK)
    elif KIND == "even_lanes":
        x = tl.load(x_ptr + offs, mask=m & (offs % 2 == 0))
        tl.store(out_ptr + offs, x, mask=m & (offs % 3 != 0))
    elif KIND == "scalar":
        first = tl.load(x_ptr + tl.program_id(0))
        tl.store(out_ptr + tl.program_id(0), first)
    elif KIND == "reverse":
        x = tl.load(x_ptr + (n - 1 - offs), mask=m)
        tl.store(out_ptr + offs, x, mask=m)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0), mask=m)


@tiles.jit
def strided_kernel(x_ptr, out_ptr, rows, cols, stride_r, stride_c, out_stride,
                   BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.arange(0, BN)
    m = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * stride_r + c[None, :] * stride_c, mask=m, other=0)
    tl.store(out_ptr + r[:, None] * out_stride + c[None, :], x, mask=m)


@tiles.jit
def block_ptr_kernel(x_ptr, out_ptr, rows, cols, KIND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, (rows, cols), (cols, 1), (pid * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (rows, cols), (cols, 1), (pid * BM, 0), (BM, BN), (1, 0))
    if KIND == "nan_padding":
        x = tl.load(src, boundary_check=(0, 1), padding_option="nan")
        tl.store(dst, x, boundary_check=(0, 1))
    elif KIND == "advance":
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(2):
            acc += tl.load(src, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
            src = tl.advance(src, (0, BN // 2))
        tl.store(dst, acc.to(out_ptr.dtype.element_ty), boundary_check=(0, 1))
    else:
        x = tl.load(src, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst, x, boundary_check=(0, 1))


@tiles.jit
def descriptor_kernel(x_ptr, out_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_tensor_descriptor(x_ptr, (rows, cols), (cols, 1), (BM, BN))
    dst = tl.make_tensor_descriptor(out_ptr, (rows, cols), (cols, 1), (BM, BN))
    x = src.load((pid * BM, 1))
    dst.store((pid * BM, 0), x)


def _copy_case(kind: str, d: DType, n: int, block: int) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [random_array(rng, d, (n,)), np.full(n, 3, d.np) if not d.is_bool else np.ones(n, np.bool_), n]
    grid = (tiles.cdiv(n, block),)
    return case("memory", f"{kind}[{d},n={n},block={block}]", masked_copy_kernel, make, grid, {1: EXACT},
                constexprs={"KIND": kind, "BLOCK": block})


def _strided_case(d: DType, rows: int, cols: int, transposed: bool) -> Case:
    def make(rng: np.random.Generator) -> list:
        base = random_array(rng, d, (cols, rows) if transposed else (rows, 2 * cols))
        view = base.T if transposed else base[:, ::2]
        sr, sc = (view.strides[0] // d.itemsize, view.strides[1] // d.itemsize)
        return [base, np.zeros((rows, cols), d.np), rows, cols, sr, sc, cols]
    bm, bn = 8, tiles.next_power_of_2(cols)
    return case("memory", f"strided[{d},{rows}x{cols},{'T' if transposed else 'every-other'}]",
                strided_kernel, make, (tiles.cdiv(rows, bm),), {1: EXACT}, constexprs={"BM": bm, "BN": bn})


def _block_case(kind: str, d: DType, rows: int, cols: int) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [random_array(rng, d, (rows, cols)), np.full((rows, cols), 9, d.np), rows, cols]
    bm, bn = 8, tiles.next_power_of_2(cols)
    kernel, extra = (descriptor_kernel, {}) if kind == "descriptor" else (block_ptr_kernel, {"KIND": kind})
    return case("memory", f"{kind}[{d},{rows}x{cols}]", kernel, make, (tiles.cdiv(rows, bm),), {1: EXACT},
                constexprs={**extra, "BM": bm, "BN": bn})


def cases(profile: Profile) -> list[Case]:
    out = []
    dtypes = profile.dtypes
    for d in dtypes:
        for block in profile.shapes:
            for n in sorted({block, max(1, block - 1), 3 * block + 1}):
                for kind in ("plain", "other", "even_lanes", "reverse", "scalar"):
                    if kind == "other" and d.is_bool:
                        continue
                    out.append(_copy_case(kind, d, n, block))
    for d in profile.sweep((D.int8, D.int32, D.float16, D.float32, D.float64)):
        for rows, cols in ((5, 3), (17, 16)):
            out.append(_strided_case(d, rows, cols, transposed=False))
            out.append(_strided_case(d, rows, cols, transposed=True))
            out.append(_block_case("zero_padding", d, rows, cols))
            out.append(_block_case("descriptor", d, rows, cols))
        if d.is_floating:
            out.append(_block_case("nan_padding", d, 13, 7))
            out.append(_block_case("advance", d, 13, 16))
    return out
