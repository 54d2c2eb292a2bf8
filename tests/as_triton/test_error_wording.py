"""Errors a Triton user's tests match: the class (``triton.TritonError``), the key phrase of the
message and, where the language refused an operation, ``str(exc.__cause__)`` (Triton's
``CompilationError`` is raised from the language's own error).  The phrases are those Triton's
unit tests (``python/test/unit/language``) match with ``pytest.raises(..., match=...)``."""

from __future__ import annotations

import re

import numpy as np
import pytest


def _raises(kernel, *args, match: str, cause: str | None = None):
    import triton

    with pytest.raises(triton.TritonError, match=match) as info:
        kernel[(1,)](*args)
    if cause is not None:
        assert re.search(cause, str(info.value.__cause__)), repr(info.value.__cause__)
    assert "test_error_wording.py:" in str(info.value)  # still names the kernel's line
    return info.value


def test_div_mod_of_mixed_signedness(alias):
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, y_ptr, out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) % tl.load(y_ptr + offs))

    x = np.arange(1, 9, dtype=np.int32)
    _raises(k, x, x.astype(np.uint32), x, match="Cannot use .* because they have different signedness")


def test_bitwise_on_floats(alias):
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, y_ptr, out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) ^ tl.load(y_ptr + offs))

    x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    err = _raises(k, x, np.arange(8, dtype=np.int32), x, match="invalid operands of type")
    assert isinstance(err.__cause__, TypeError)


def test_slice_index(alias):
    import triton

    @triton.jit
    def k(dst):
        dst[10:]

    _raises(k, np.zeros(128, np.float32), match="unsupported tensor index")


def test_program_id_axis(alias):
    import triton
    import triton.language as tl

    @triton.jit
    def k(dst):
        tl.program_id(20)

    _raises(k, np.zeros(4, np.float32), match="program_id axis",
            cause=r"program_id axis must be 0, 1, or 2 but got 20")


def test_expand_dims_bad_axes(alias):
    import triton
    import triton.language as tl

    @triton.jit
    def too_negative(dummy, N: tl.constexpr):
        tl.expand_dims(tl.arange(0, N), -3)

    @triton.jit
    def too_big(dummy, N: tl.constexpr):
        tl.expand_dims(tl.arange(0, N), 2)

    @triton.jit
    def repeated(dummy, N: tl.constexpr):
        tl.expand_dims(tl.arange(0, N), (0, -3))

    d = np.zeros(1, np.float32)
    _raises(too_negative, d, 32, match="invalid axis", cause="invalid axis -3")
    _raises(too_big, d, 32, match="invalid axis", cause="invalid axis 2")
    _raises(repeated, d, 32, match="duplicate axes", cause=r"duplicate axes, normalized axes = \[0, 0\]")


@pytest.mark.parametrize("axes", [0, 1, -1, (0, 1), (0, 2), (-1, 0), (1, -1)])
def test_expand_dims_good_axes_agree_with_numpy(alias, axes):
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, out_ptr, AXES: tl.constexpr, NDIM: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
        y = tl.expand_dims(x, AXES)
        tl.store(out_ptr + tl.arange(0, 32), tl.reshape(y, (32,)) * 3)
        tl.static_assert(len(y.shape) == NDIM)

    x = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    out = np.zeros(32, np.float32)
    want = np.expand_dims(x, axes) * 3
    k[(1,)](x, out, AXES=axes, NDIM=want.ndim)
    np.testing.assert_array_equal(out, want.reshape(32))


def test_cause_of_a_static_assert_stays_empty(alias):
    """Triton's ``CompileTimeAssertionFailure`` has no ``__cause__``: the failing assert is the error."""
    import triton
    import triton.language as tl

    @triton.jit
    def k(dummy, N: tl.constexpr):
        tl.static_assert(N % 2 == 0, "N must be even")

    with pytest.raises(triton.TritonError, match="N must be even") as info:
        k[(1,)](np.zeros(1, np.float32), 3)
    assert info.value.__cause__ is None


def test_must_use_result(alias):
    """``triton.must_use_result``: dropping the result of a marked function is a compile error."""
    import triton
    import triton.language as tl

    @triton.must_use_result("Square it where you use it.")
    @triton.jit
    def square(x):
        return x * x

    @triton.jit
    def drops(out_ptr):
        a = tl.full((16,), 3.0, tl.float32)
        square(a)
        tl.store(out_ptr + tl.arange(0, 16), a)

    @triton.jit
    def uses(out_ptr):
        a = tl.full((16,), 3.0, tl.float32)
        tl.store(out_ptr + tl.arange(0, 16), square(a) + 1)

    out = np.zeros(16, np.float32)
    _raises(drops, out, match=r"The result of .*square is not being used. Square it where you use it.")
    uses[(1,)](out)
    np.testing.assert_array_equal(out, np.full(16, 10.0, np.float32))
