"""Loop-carried and branch-merged variables keep one type, as in Triton.

The accepted/refused verdicts below were checked against Triton 3.9's compiled
frontend (``ASTSource.make_ir`` for a CUDA sm_80 target, which runs without a GPU).
"""

import numpy as np
import pytest

import tiles
from tiles.core.errors import CompilationError

from . import carried_kernels as K


@pytest.fixture(autouse=True)
def _interpreter_backend():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("dtype, new", [(np.float32, "float32"), (np.int64, "int64"),
                                        (np.uint32, "uint32"), (np.float64, "float32")])
def test_int_zero_accumulating_another_type_is_refused(dtype, new):
    x = np.random.default_rng(1).uniform(1, 5, 7).astype(dtype)
    out = np.zeros(1, dtype)
    kernel = K.sum_from_int_zero
    if dtype == np.float64:  # 0.0 + float64 loads: float32 becomes float64
        kernel, new = K.sum_from_float_zero, "float64"
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](x, out, 7)
    msg = str(info.value)
    assert "'acc'" in msg and new in msg
    assert ("int32" if kernel is K.sum_from_int_zero else "float32") in msg
    assert f":{_line_of(kernel, 'for i in range(n)')} in " in msg  # the loop's line
    assert f"line {_line_of(kernel, 'acc += tl.load')}" in msg  # where the type changed
    assert f"tl.zeros([], dtype=tl.{new})" in msg


def test_while_loop_type_change_is_refused():
    x = np.random.default_rng(2).uniform(1, 5, 5).astype(np.float32)
    with pytest.raises(CompilationError, match=r"'acc' is int32 before the loop but becomes float32"):
        K.while_sum_from_int_zero[(1,)](x, np.zeros(1, np.float32), 5)


def test_scalar_becoming_block_is_refused():
    x = np.random.default_rng(3).standard_normal(32).astype(np.float32)
    with pytest.raises(CompilationError, match=r"tl.zeros\(\[16\], dtype=tl.float32\)"):
        K.scalar_becomes_block[(1,)](x, np.zeros(16, np.float32), 2, BLOCK=16)


@pytest.mark.parametrize("kernel, pattern", [
    (K.if_number_else_tile, r"'v' is float32 in the then-branch but int32 in the else-branch"),
    (K.if_changes_initial, r"'v' is int32 before the if but one branch makes it float32"),
    (K.returns_mixed, r"is float32 in the then-branch but int32 in the else-branch"),
])
def test_if_merge_type_change_is_refused(kernel, pattern):
    x = np.random.default_rng(4).standard_normal(1).astype(np.float32)
    with pytest.raises(CompilationError, match=pattern):
        kernel[(1,)](x, np.zeros(1, np.float32), 3)


@pytest.mark.parametrize("kernel, dtype, out_dtype", [
    (K.sum_from_int_zero, np.int32, np.int32),     # 0 is int32: Triton's only "promotion"
    (K.sum_from_int_zero, np.int16, np.int32),     # int32 + int16 stays int32
    (K.sum_from_float_zero, np.float32, np.float32),
    (K.sum_from_float_zero, np.float16, np.float32),  # float32 + float16 stays float32
    (K.sum_from_typed_zero, np.float32, np.float32),
    (K.while_sum_from_int_zero, np.int32, np.int32),
])
def test_same_type_accumulators_are_accepted(kernel, dtype, out_dtype):
    rng = np.random.default_rng(5)
    n = 13
    x = rng.integers(-1000, 1000, n).astype(dtype) if np.dtype(dtype).kind == "i" \
        else rng.uniform(-4, 4, n).astype(dtype)
    out = np.zeros(1, out_dtype)
    kernel[(1,)](x, out, n)
    expected = x.astype(out_dtype).sum(dtype=out_dtype)
    np.testing.assert_allclose(out[0], expected, rtol=1e-5)


@pytest.mark.parametrize("n", [3, 0])
def test_branches_with_numbers_of_one_type_are_accepted(n):
    x = np.random.default_rng(6).standard_normal(1).astype(np.float32)
    out = np.zeros(1, np.float32)
    K.if_two_numbers[(1,)](x, out, n)
    np.testing.assert_array_equal(out, x * (1 if n > 0 else -1))
