"""Bad kernels and bad launches fail with a clear message that names the kernel's file and line."""

import inspect

import numpy as np
import pytest

import tiles
import tiles.language as tl

FILE = "test_errors.py"


def line_of(fn, text: str) -> int:
    """The line number of the first source line of ``fn`` that contains ``text``."""
    lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} not in {fn}")


def assert_points_at(error: BaseException, fn, text: str, *words: str) -> None:
    message = str(error)
    assert f"{FILE}:{line_of(fn, text)}" in message, message
    for word in words:
        assert word in message, f"{word!r} not in: {message}"


@pytest.fixture(autouse=True)
def _interpreter_backend():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)


@tiles.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_wrong_argument_count():
    x = np.zeros(4, np.float32)
    with pytest.raises(tiles.LaunchError) as info:
        copy_kernel[(1,)](x, x, BLOCK=4)
    assert_points_at(info.value, copy_kernel, "@tiles.jit", "copy_kernel", "n")


def test_wrong_argument_type():
    x = np.zeros(4, np.float32)
    with pytest.raises(tiles.LaunchError) as info:
        copy_kernel[(1,)](x, [1, 2, 3], 4, BLOCK=4)
    assert_points_at(info.value, copy_kernel, "@tiles.jit", "out_ptr", "list")


@tiles.jit
def runtime_arange_kernel(out_ptr, n):
    tl.store(out_ptr + tl.arange(0, n), 1)


def test_runtime_value_where_a_constexpr_is_needed():
    with pytest.raises(tiles.CompilationError) as info:
        runtime_arange_kernel[(1,)](np.zeros(8, np.int32), 8)
    assert_points_at(info.value, runtime_arange_kernel, "tl.arange(0, n)", "compile-time", "constexpr")


@tiles.jit
def odd_arange_kernel(out_ptr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), 1)


def test_arange_needs_a_power_of_two():
    with pytest.raises(tiles.CompilationError) as info:
        odd_arange_kernel[(1,)](np.zeros(8, np.int32), N=6)
    assert_points_at(info.value, odd_arange_kernel, "tl.arange(0, N)", "power of two", "6")


@tiles.jit
def shape_mismatch_kernel(x_ptr):
    a = tl.load(x_ptr + tl.arange(0, 16))
    b = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 16), a + b)


def test_shape_mismatch():
    with pytest.raises(tiles.CompilationError) as info:
        shape_mismatch_kernel[(1,)](np.zeros(16, np.float32))
    assert_points_at(info.value, shape_mismatch_kernel, "a + b", "[16]", "[8]", "broadcast")


@tiles.jit
def int_exp_kernel(x_ptr):
    offs = tl.arange(0, 4)
    tl.store(x_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def test_dtype_not_allowed():
    with pytest.raises(tiles.CompilationError) as info:
        int_exp_kernel[(1,)](np.zeros(4, np.int32))
    assert_points_at(info.value, int_exp_kernel, "tl.exp(", "tl.exp", "int32", "floating")


def test_calling_a_kernel_from_host_code():
    x = np.zeros(4, np.float32)
    with pytest.raises(tiles.TilesError) as info:
        copy_kernel(x, x, 4, BLOCK=4)
    assert_points_at(info.value, copy_kernel, "@tiles.jit", "copy_kernel[grid]")


@tiles.jit
def out_of_bounds_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x)


def test_out_of_bounds_load_names_line_and_program():
    x = np.zeros(40, np.float32)  # programs 0..4 fit, program 5 reads past the end
    with pytest.raises(tiles.KernelRuntimeError) as info:
        out_of_bounds_kernel[(6,)](x, np.zeros(64, np.float32), BLOCK=8)
    assert_points_at(info.value, out_of_bounds_kernel, "x = tl.load(x_ptr + offs)", "5")
    assert "program" in str(info.value).lower()


def test_out_of_bounds_store_names_line_and_program():
    out = np.zeros(20, np.float32)
    with pytest.raises(tiles.KernelRuntimeError) as info:
        out_of_bounds_kernel[(4,)](np.zeros(32, np.float32), out, BLOCK=8)
    assert_points_at(info.value, out_of_bounds_kernel, "tl.store(out_ptr + offs, x)", "2")


@tiles.jit
def carried_type_change_kernel(x_ptr, n):
    acc = tl.zeros([8], dtype=tl.int32)
    for _ in range(n):
        acc = acc + tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 8), acc)


def test_loop_carried_type_change():
    with pytest.raises(tiles.CompilationError) as info:
        carried_type_change_kernel[(1,)](np.zeros(8, np.float32), 3)
    assert_points_at(info.value, carried_type_change_kernel, "for _ in range(n)", "acc", "int32", "float32")


@tiles.jit
def break_kernel(x_ptr, n):
    for i in range(n):
        if i > 2:
            break
        tl.store(x_ptr + i, i)


@tiles.jit
def continue_kernel(x_ptr, n):
    i = 0
    while i < n:
        i += 1
        continue


@pytest.mark.parametrize("kernel,statement", [(break_kernel, "break"), (continue_kernel, "continue")])
def test_break_and_continue_are_rejected(kernel, statement):
    with pytest.raises(tiles.CompilationError) as info:
        kernel[(1,)](np.zeros(8, np.int32), 5)
    assert_points_at(info.value, kernel, f"            {statement}"[-len(statement) - 8:], statement,
                     "not supported")


@tiles.jit
def wrong_helper_arity_kernel(x_ptr):
    tl.store(x_ptr, helper_with_two_args(1))


@tiles.jit
def helper_with_two_args(a, b):
    return a + b


def test_wrong_argument_count_of_a_helper():
    with pytest.raises(tiles.CompilationError) as info:
        wrong_helper_arity_kernel[(1,)](np.zeros(1, np.int32))
    assert_points_at(info.value, wrong_helper_arity_kernel, "helper_with_two_args(1)", "b")
