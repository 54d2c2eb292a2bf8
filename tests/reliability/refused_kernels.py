"""Kernels that read module globals and pass non-boolean masks (Triton refuses the bad ones)."""

import math

import numpy as np

import tiles
import tiles.language as tl

SCALE = 3.0  # a plain float: not a constexpr
OFFSETS = np.arange(4)
CONST_SCALE = tl.constexpr(3.0)
ROUNDS = tl.constexpr(2)
DTYPE = tl.float32


def plain_helper(x):
    return x * 2


@tiles.jit
def jit_helper(x):
    return x + 1


@tiles.jit
def reads_plain_global(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, x * SCALE)


@tiles.jit
def reads_array_global(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr + OFFSETS[1]))


@tiles.jit
def reads_constexpr_global(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, x * CONST_SCALE)


@tiles.jit
def reads_allowed_globals(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(DTYPE)
    y = jit_helper(plain_helper(x)) * math.pi
    tl.store(out_ptr + offs, y, mask=offs < n)


@tiles.jit
def float_mask_load(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    m = (offs < n).to(tl.float32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0))


@tiles.jit
def float_mask_store(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    m = (offs < n).to(tl.float32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=m)


@tiles.jit
def int_mask_store(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    m = (offs < n).to(tl.int32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=m)


@tiles.jit
def float_mask_atomic(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs), mask=(offs < n).to(tl.float32))


@tiles.jit
def bool_masks(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1.0)
    tl.store(out_ptr + offs, x, mask=True)
