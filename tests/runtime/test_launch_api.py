"""Triton's launch keywords and the launch checks every backend shares (interpreter and OpenCL)."""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.core.errors import LaunchError, UnsupportedError
from tiles.runtime.launch_options import HINTS


@tiles.jit
def scaled_copy(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale, mask=mask)  # the store line the read-only check names


STORE_LINE = scaled_copy.fn.__code__.co_firstlineno + 5


@tiles.jit
def grid_ids(out_ptr):
    """out[pid0 * 100 + pid1 * 10 + pid2] += 1: which programs ran, and how often."""
    pid = tl.program_id(0) * 100 + tl.program_id(1) * 10 + tl.program_id(2)
    tl.atomic_add(out_ptr + pid, 1)


def _backends():
    found = [pytest.param("interpreter")]
    ok, why = registry.status("opencl")
    found.append(pytest.param("opencl", marks=pytest.mark.skipif(not ok, reason=f"no OpenCL: {why}")))
    return found


@pytest.fixture(params=_backends())
def backend(request):
    return request.param


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32)


# ------------------------------------------------------------------ launch keywords


def test_every_triton_hint_is_accepted_and_changes_nothing():
    x, out = _inputs(37, seed=1)
    hints = {"num_ctas": 2, "maxnreg": 128, "enable_fp_fusion": False, "launch_cooperative_grid": True,
             "launch_pdl": True, "sanitize_overflow": False, "waves_per_eu": 2, "matrix_instr_nonkdim": 16,
             "kpack": 2, "default_dot_input_precision": "ieee", "ptx_options": None, "extern_libs": None}
    assert set(hints) <= HINTS
    scaled_copy[(2,)](x, out, 37, 1.5, BLOCK=32, num_warps=2, num_stages=1, debug=True, **hints)
    np.testing.assert_array_equal(out, x * np.float32(1.5))


def test_unknown_keyword_names_the_kernel_and_its_parameters():
    x, out = _inputs(8, seed=2)
    with pytest.raises(LaunchError, match=r"test_launch_api.py:\d+ in scaled_copy: .*num_wrps"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_wrps=4)


@pytest.mark.parametrize("option, value", [("num_ctas", 0), ("maxnreg", -1), ("num_ctas", 1.5)])
def test_bad_hint_values_are_refused(option, value):
    x, out = _inputs(8, seed=3)
    with pytest.raises(LaunchError, match=f"{option} must be an int >= 1"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, **{option: value})


def test_ir_override_and_device_are_refused_with_a_reason():
    x, out = _inputs(8, seed=4)
    with pytest.raises(UnsupportedError, match="ir_override"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, ir_override="kernel.ttgir")
    with pytest.raises(LaunchError, match="device= launch option"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, device="cuda:0")


def test_stream_is_handed_to_a_launcher_that_takes_it(monkeypatch):
    backend = registry.get("interpreter")
    seen = []
    original = type(backend).make_launcher

    def recording_launcher(self, compiled, plan):
        inner = original(self, compiled, plan)

        def launcher(grid, values, stream=None):
            seen.append(stream)
            inner(grid, values, stream=stream)
        return launcher
    monkeypatch.setattr(type(backend), "make_launcher", recording_launcher)

    @tiles.jit
    def fresh_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    x, out = _inputs(8, seed=5)
    fresh_copy[(1,)](x, out, 8, BLOCK=8, stream=1234)
    fresh_copy[(1,)](x, out, 8, BLOCK=8)
    assert seen == [1234, None]
    np.testing.assert_array_equal(out, x)


def test_a_launcher_without_streams_says_so(monkeypatch):
    backend = registry.get("interpreter")
    original = type(backend).make_launcher

    def old_style(self, compiled, plan):
        inner = original(self, compiled, plan)
        return lambda grid, values: inner(grid, values)
    monkeypatch.setattr(type(backend), "make_launcher", old_style)

    @tiles.jit
    def fresh_fill(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), 1.0)
    out = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="does not take stream="):
        fresh_fill[(1,)](out, stream=7)
    fresh_fill[(1,)](out)
    np.testing.assert_array_equal(out, 1.0)


def test_run_warmup_compiles_without_launching():
    x, out = _inputs(16, seed=6)
    compiled = scaled_copy.run(x, out, 16, 2.0, BLOCK=16, grid=(1,), warmup=True)
    assert compiled.name == "scaled_copy"
    assert not out.any()
    scaled_copy.run(x, out, 16, 2.0, BLOCK=16, grid=(1,), warmup=False)
    np.testing.assert_array_equal(out, x * 2)


def test_warmup_takes_dtypes_in_place_of_arrays():
    compiled = scaled_copy.warmup(np.dtype(np.float16), tiles.MockTensor(np.dtype(np.float16)), 64, 1.0,
                                  BLOCK=64, grid=(1,))
    pointer_types = [str(p.value.type.dtype) for p in compiled.ir.params[:2]]
    assert all("float16" in t for t in pointer_types), pointer_types
    compiled = scaled_copy.warmup(np.int32, np.int32, 64, 2, BLOCK=64, grid=(1,))
    assert [str(p.value.type.dtype) for p in compiled.ir.params[:2]] == [str(tiles.language.pointer_type(tl.int32))] * 2


def test_a_valid_launch_does_not_let_an_equal_float_num_warps_through():
    x, out = _inputs(8, seed=15)
    scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_warps=4)
    with pytest.raises(LaunchError, match="num_warps must be a power of two"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_warps=4.0)


# ------------------------------------------------------------------ grid rules


@pytest.mark.parametrize("grid, ran", [
    ((2, 3, 1, 7), {(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 0, 0), (1, 1, 0), (1, 2, 0)}),  # sizes past 3: ignored
    ([np.int64(2)], {(0, 0, 0), (1, 0, 0)}),
    ((np.int32(1), 2), {(0, 0, 0), (0, 1, 0)}),
    (3, {(0, 0, 0), (1, 0, 0), (2, 0, 0)}),
    ((2, 0), set()),                       # a zero size launches nothing
    ((0,), set()),
])
def test_grid_rules(backend, grid, ran):
    out = np.zeros(1000, np.int32)
    grid_ids[grid](out, backend=backend)
    expected = np.zeros(1000, np.int32)
    for p0, p1, p2 in ran:
        expected[p0 * 100 + p1 * 10 + p2] = 1
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("grid, message", [
    ((1.9,), r"grid size 0 must be an int, got 1\.9 \(float\).*cdiv"),
    ((2, np.float32(1.0)), r"grid size 1 must be an int"),
    ((True,), r"grid size 0 must be an int, got True"),
    ((), r"the grid is empty"),
    ((-1,), r"grid size 0 must be between 0 and 2147483647, got -1"),
    ((1, 2**31), r"grid size 1 must be between 0 and"),
    ("abc", r"the grid must be a tuple of ints"),
])
def test_bad_grids_are_refused_alike_on_every_backend(backend, grid, message):
    out = np.zeros(1000, np.int32)
    with pytest.raises(LaunchError, match=message) as caught:
        grid_ids[grid](out, backend=backend)
    assert f"test_launch_api.py:{grid_ids.fn.__code__.co_firstlineno}" in str(caught.value)
    assert not out.any()


def test_grid_function_sees_meta_parameters_and_options():
    x, out = _inputs(100, seed=7)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tiles.cdiv(meta["n"], meta["BLOCK"]),)
    scaled_copy[grid](x, out, 100, 0.5, BLOCK=32, num_warps=2)
    assert seen["BLOCK"] == 32 and seen["num_warps"] == 2
    np.testing.assert_array_equal(out, x * np.float32(0.5))


# ------------------------------------------------------------------ shared argument checks


@pytest.mark.parametrize("num_warps", [0, 3, 6, -4, 2.0, True, 64])
def test_num_warps_must_be_a_power_of_two_within_the_limit(backend, num_warps):
    x, out = _inputs(8, seed=8)
    limit = 32 if backend == "interpreter" else registry.get(backend).target().max_threads_per_block // 32
    if num_warps == 64 and limit >= 64:  # within this target's limit: it runs
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_warps=num_warps, backend=backend)
        np.testing.assert_array_equal(out, x)
        return
    with pytest.raises(LaunchError, match=rf"num_warps must be a power of two from 1 to {limit} on {backend}, "
                                          rf"got {num_warps!r}") as caught:
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_warps=num_warps, backend=backend)
    assert "test_launch_api.py" in str(caught.value)


def test_read_only_output_names_the_argument_and_the_store(backend):
    x, out = _inputs(16, seed=9)
    out.flags.writeable = False
    with pytest.raises(LaunchError) as caught:
        scaled_copy[(1,)](x, out, 16, 1.0, BLOCK=16, backend=backend)
    text = str(caught.value)
    assert "'out_ptr' is a read-only NumPy array" in text
    assert f"test_launch_api.py:{STORE_LINE}" in text
    assert not out.any()


def test_read_only_input_is_fine(backend):
    x, out = _inputs(16, seed=10)
    x.flags.writeable = False
    scaled_copy[(1,)](x, out, 16, 3.0, BLOCK=16, backend=backend)
    np.testing.assert_array_equal(out, x * 3)
    writable = x.copy()
    out[:] = 0
    scaled_copy[(1,)](writable, out, 16, 3.0, BLOCK=16, backend=backend)  # a new launch key, same code
    np.testing.assert_array_equal(out, x * 3)


@pytest.mark.parametrize("bad, message", [
    (np.ones(4, np.complex64), r"argument 'x_ptr': arrays of complex64 cannot be passed"),
    (np.array([1, "a"], dtype=object), r"argument 'x_ptr': arrays of object cannot be passed"),
    (1 + 2j, r"argument 'x_ptr': cannot pass a complex"),
])
def test_unsupported_argument_types(backend, bad, message):
    out = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match=message) as caught:
        scaled_copy[(1,)](bad, out, 4, 1.0, BLOCK=4, backend=backend)
    assert "test_launch_api.py" in str(caught.value)


@pytest.mark.parametrize("num_stages", [-1, 1.5])  # None means the default, as in Triton
def test_num_stages_must_be_a_non_negative_int(num_stages):
    x, out = _inputs(8, seed=12)
    with pytest.raises(LaunchError, match=rf"num_stages must be an int >= 0, got {num_stages!r}"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, num_stages=num_stages)


# ------------------------------------------------------------------ the same checks on the GPU targets


def compile_only_cuda():
    """The CUDA backend compiling real PTX (no GPU needed), recording launches instead of running them."""
    from tiles.backends.cuda import CUDABackend

    class CompileOnlyCUDA(CUDABackend):
        name = "cuda"
        launched: list = []

        def available(self):
            return True, ""

        def arch(self):
            return "sm_90"

        def make_launcher(self, compiled, plan):
            def launcher(grid, values, stream=None):
                type(self).launched.append((grid, stream))
            return launcher
    return CompileOnlyCUDA()


@pytest.mark.parametrize("name, limit", [("cuda", 32), ("rocm", 16)])
def test_num_warps_rule_on_gpu_targets(name, limit, monkeypatch):
    monkeypatch.setenv("TILES_ROCM_ARCH", "gfx942")  # 64-wide wavefronts when no device is present
    x, out = _inputs(8, seed=13)
    backend = compile_only_cuda() if name == "cuda" else name
    with pytest.raises(LaunchError, match=rf"scaled_copy: num_warps must be a power of two from 1 to {limit} on "
                                          rf"{name}, got 3"):
        scaled_copy.warmup(x, out, 8, 1.0, BLOCK=8, num_warps=3, backend=backend)


def test_cuda_gets_the_same_grid_and_argument_checks_and_the_stream():
    backend = compile_only_cuda()
    x, out = _inputs(8, seed=14)
    with pytest.raises(LaunchError, match=r"grid size 0 must be an int, got 1\.9"):
        scaled_copy[(1.9,)](x, out, 8, 1.0, BLOCK=8, backend=backend)
    frozen = out.copy()
    frozen.flags.writeable = False
    with pytest.raises(LaunchError, match=rf"'out_ptr' is a read-only NumPy array.*test_launch_api.py:{STORE_LINE}"):
        scaled_copy[(1,)](x, frozen, 8, 1.0, BLOCK=8, backend=backend)
    scaled_copy[(2, 3, 4, 5)](x, out, 8, 1.0, BLOCK=8, backend=backend, stream=99)
    scaled_copy[(2, 0)](x, out, 8, 1.0, BLOCK=8, backend=backend)
    assert type(backend).launched == [((2, 3, 4), 99)]


def test_enable_fp_fusion_must_be_a_bool():
    x, out = _inputs(8, seed=4)
    with pytest.raises(LaunchError, match=r"test_launch_api.py:\d+ in scaled_copy: enable_fp_fusion must be True"):
        scaled_copy[(1,)](x, out, 8, 1.0, BLOCK=8, enable_fp_fusion="no")
