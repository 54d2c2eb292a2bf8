"""Which operators take a pointer, as in Triton: an array launched in an int's place is refused.

Triton 3.9's rule, checked with ``triton.compile`` (its front end, for sm_90) on each kernel
below: a pointer may be added to an integer (either side) and have an integer subtracted from
it; every other binary operator with a pointer operand is refused at compile time, comparisons
included (``ptr < int``, ``int < ptr``, ``ptr == 0``, even ``ptr == ptr`` and ``ptr < ptr``),
as are ``ptr - ptr``, ``int - ptr``, ``ptr * int``, ``ptr & int`` and ``ptr + float``.  A pointer
as a condition (``if dW:``, ``tl.where(p, ...)``, ``while p and ...``) is accepted: Triton casts
it to int1, its address != 0.
"""

import re

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.errors import CompilationError


@tiles.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def test_an_array_in_place_of_the_size_is_refused_naming_the_line(rng):
    x, y = rng.standard_normal(37).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    out = np.full_like(x, 7.0)
    sizes = np.array([x.size], np.int32)  # the mistake: the size passed as an array
    with pytest.raises(CompilationError, match=r"cannot compare int32 with ptr<int32> \(<\)") as info:
        add_kernel[(tiles.cdiv(x.size, 16),)](x, y, out, sizes, BLOCK_SIZE=16)
    assert "test_pointer_operands.py:" in str(info.value) and "mask = offsets < n_elements" in str(info.value)
    assert "pass an int" in str(info.value)
    np.testing.assert_array_equal(out, 7.0)  # nothing ran
    add_kernel[(tiles.cdiv(x.size, 16),)](x, y, out, x.size, BLOCK_SIZE=16)  # the int works
    np.testing.assert_array_equal(out, x + y)


@tiles.jit
def binary_kernel(p, q, o, n, f, OP: tl.constexpr):
    if OP == "p<n":
        r = (p < n).to(tl.int32)
    elif OP == "n<p":
        r = (n < p).to(tl.int32)
    elif OP == "p==0":
        r = (p == 0).to(tl.int32)
    elif OP == "p!=n":
        r = (p != n).to(tl.int32)
    elif OP == "p==q":
        r = (p == q).to(tl.int32)
    elif OP == "p<q":
        r = (p < q).to(tl.int32)
    elif OP == "p>=f":
        r = (p >= f).to(tl.int32)
    elif OP == "block<n":
        r = tl.sum(((p + tl.arange(0, 4)) < n).to(tl.int32))
    elif OP == "p-q":
        r = (p - q).to(tl.int32)
    elif OP == "n-p":
        r = (n - p).to(tl.int32)
    elif OP == "p*n":
        r = (p * n).to(tl.int32)
    elif OP == "p&n":
        r = (p & n).to(tl.int32)
    elif OP == "p+f":
        r = tl.load(p + f)
    elif OP == "p+n":
        r = tl.load(p + n)
    elif OP == "n+p":
        r = tl.load(n + p)
    else:
        r = tl.load((p + 2 * n) - n)
    tl.store(o, r)


REFUSED = ["p<n", "n<p", "p==0", "p!=n", "p==q", "p<q", "p>=f", "block<n", "p-q", "n-p", "p*n", "p&n", "p+f"]
ACCEPTED = ["p+n", "n+p", "p-n"]


@pytest.mark.parametrize("op", REFUSED + ACCEPTED)
def test_triton_rule_for_pointer_operands(rng, op):
    p = rng.integers(-50, 50, 16).astype(np.int32)
    q, o = np.zeros(16, np.int32), np.full(1, -1, np.int32)
    n = 3
    launch = binary_kernel[(1,)]
    if op in REFUSED:
        with pytest.raises(CompilationError, match=re.escape("test_pointer_operands.py:")):
            launch(p, q, o, n, 1.5, OP=op)
        assert o[0] == -1
        return
    launch(p, q, o, n, 1.5, OP=op)
    assert o[0] == p[n]


@tiles.jit
def optional_outputs_kernel(x_ptr, dw_ptr, db_ptr, n, BLOCK: tl.constexpr):
    """FlagGems' ``if dW:``: a pointer (or None) as a condition is its address != 0, as in Triton."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if dw_ptr:
        tl.store(dw_ptr + offs, x * 2, mask=mask)
    if db_ptr:
        tl.store(db_ptr + offs, x + 1, mask=mask)


def test_a_pointer_as_a_condition_is_accepted(rng):
    x = rng.standard_normal(13).astype(np.float32)
    dw, db = np.zeros_like(x), np.zeros_like(x)
    optional_outputs_kernel[(1,)](x, dw, None, x.size, BLOCK=16)
    np.testing.assert_array_equal(dw, x * 2)
    optional_outputs_kernel[(1,)](x, None, db, x.size, BLOCK=16)
    np.testing.assert_array_equal(db, x + 1)
