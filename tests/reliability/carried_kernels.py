"""Kernels whose loop-carried or branch-merged variables change type (or keep it)."""

import tiles
import tiles.language as tl


@tiles.jit
def sum_from_int_zero(x_ptr, out_ptr, n):
    acc = 0
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@tiles.jit
def sum_from_float_zero(x_ptr, out_ptr, n):
    acc = 0.0
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@tiles.jit
def sum_from_typed_zero(x_ptr, out_ptr, n):
    acc = tl.zeros([], dtype=tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@tiles.jit
def while_sum_from_int_zero(x_ptr, out_ptr, n):
    acc = 0
    i = 0
    while i < n:
        acc += tl.load(x_ptr + i)
        i += 1
    tl.store(out_ptr, acc)


@tiles.jit
def scalar_becomes_block(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0.0
    for i in range(n):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@tiles.jit
def if_number_else_tile(x_ptr, out_ptr, n):
    if n > 0:
        v = tl.load(x_ptr)
    else:
        v = 0
    tl.store(out_ptr, v)


@tiles.jit
def if_changes_initial(x_ptr, out_ptr, n):
    v = 0
    if n > 0:
        v = tl.load(x_ptr)
    tl.store(out_ptr, v)


@tiles.jit
def if_two_numbers(x_ptr, out_ptr, n):
    if n > 0:
        v = 1
    else:
        v = -1
    tl.store(out_ptr, tl.load(x_ptr) * v)


@tiles.jit
def _helper_returns_mixed(v, n):
    if n > 0:
        return v
    return 0


@tiles.jit
def returns_mixed(x_ptr, out_ptr, n):
    tl.store(out_ptr, _helper_returns_mixed(tl.load(x_ptr), n))
