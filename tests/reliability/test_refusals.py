"""What Triton refuses at compile time, refused here with the kernel's line: data globals, non-bool masks.

Verdicts checked against Triton 3.9's compiled frontend (``ASTSource.make_ir``): a global
``SCALE = 3.0`` raises "Cannot access global variable SCALE"; a float or int32 mask on
``tl.store``/atomics raises "Mask must have boolean scalar type" (on ``tl.load`` the MLIR
verifier refuses it).
"""

import inspect

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.errors import CompilationError

from . import refused_kernels as K


@pytest.fixture(autouse=True)
def _interpreter_backend():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)


def _line(kernel, text):
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("kernel, name, text", [
    (K.reads_plain_global, "SCALE", "x * SCALE"),
    (K.reads_array_global, "OFFSETS", "OFFSETS[1]"),
])
def test_data_global_is_refused_with_its_line(kernel, name, text):
    x = np.random.default_rng(21).standard_normal(4).astype(np.float32)
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](x, np.zeros(1, np.float32))
    msg = str(info.value)
    assert f"refused_kernels.py:{_line(kernel, text)} " in msg
    assert f"global {name!r}" in msg and f"{name} = tl.constexpr(" in msg


def test_modules_functions_dtypes_and_defaults_are_allowed():
    x = np.random.default_rng(22).standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    K.reads_allowed_globals[(1,)](x, out, 13)
    want = np.where(np.arange(16) < 13, (x * 2 + 1) * np.float32(np.pi), 0)
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.xfail(not isinstance(tl.constexpr(3.0), tl.constexpr), strict=True,
                   reason="tl.constexpr(v) returns v itself until helper lang's constexpr class is merged")
def test_constexpr_global_is_allowed():
    x = np.random.default_rng(23).standard_normal(1).astype(np.float32)
    out = np.zeros(1, np.float32)
    K.reads_constexpr_global[(1,)](x, out)
    np.testing.assert_allclose(out, x * 3.0, rtol=1e-6)


@pytest.mark.parametrize("kernel, text, dtype", [
    (K.float_mask_load, "tl.load(x_ptr + offs, mask=m", "float32"),
    (K.float_mask_store, "tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=m)", "float32"),
    (K.int_mask_store, "tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=m)", "int32"),
    (K.float_mask_atomic, "tl.atomic_add", "float32"),
])
def test_non_boolean_mask_is_refused(kernel, text, dtype):
    x = np.random.default_rng(24).standard_normal(16).astype(np.float32)
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](x, np.zeros(16, np.float32), 9)
    msg = str(info.value)
    assert f"refused_kernels.py:{_line(kernel, text)} " in msg
    assert "mask must be a boolean tile" in msg and dtype in msg


def test_boolean_masks_still_work():
    x = np.random.default_rng(25).standard_normal(16).astype(np.float32)
    out = np.full(16, 7.0, np.float32)
    K.bool_masks[(1,)](x, out, 11)
    np.testing.assert_array_equal(out, np.where(np.arange(16) < 11, x, -1.0))
