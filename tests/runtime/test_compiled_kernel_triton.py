"""Triton's CompiledKernel surface that tutorial wrappers use: ``kernel.warmup(...)`` with a
parameter named like a launch option, ``_init_handles``/``n_regs``/``metadata.shared`` for
occupancy arithmetic, and ``compiled[grid](*every_argument)`` launches."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def rows_softmax(out_ptr, in_ptr, n_rows, n_cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@tiles.jit
def scale(out_ptr, in_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n) * factor, mask=offs < n)


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_warmup_gives_num_stages_to_the_parameter_of_that_name_and_launches(rng):
    x = rng.standard_normal((37, 53)).astype(np.float32)
    y = np.full_like(x, np.nan)
    compiled = rows_softmax.warmup(y, x, 37, 53, BLOCK=64, num_stages=2, num_warps=8, grid=(1,))
    compiled._init_handles()
    assert compiled.options.num_warps == 8
    compiled[(5, 1, 1)](y, x, 37, 53, 64, 2)
    np.testing.assert_allclose(y, softmax_ref(x), rtol=1e-6, atol=1e-7)


def test_interpreter_reports_occupancy_inputs():
    compiled = rows_softmax.warmup(np.float32, np.float32, 8, 100, BLOCK=128, num_stages=1, grid=(1,))
    props = tiles.runtime.driver.active.utils.get_device_properties(0)
    assert compiled.n_regs > 0 and compiled.n_spills == 0
    assert compiled.metadata.shared == 128 * 4 == compiled.metadata["shared"]  # the reduced row
    occupancy = props["max_num_regs"] // (compiled.n_regs * props["warpSize"] * 8)
    assert min(occupancy, props["max_shared_mem"] // compiled.metadata.shared) >= 1
    assert scale.warmup(np.float32, np.float32, 10, 2.0, BLOCK=16).metadata.shared == 0  # no reduction


def test_metadata_names_the_options_as_triton_does():
    compiled = rows_softmax.warmup(np.float32, np.float32, 8, 100, BLOCK=128, num_stages=2, num_warps=2, grid=(1,))
    meta = compiled.metadata
    assert (meta.name, meta.num_warps, meta.num_stages, meta.num_ctas) == ("rows_softmax", 2, 2, 1)
    assert meta.maxnreg is None and meta.debug is False and meta.enable_fp_fusion is compiled.options.fp_fusion
    restored = type(compiled).restore(compiled.ir, compiled.options, compiled.asm, dict(meta))
    assert restored.metadata == meta and "num_warps" not in restored.extra  # options are not saved facts


def test_metadata_attribute_errors_name_the_keys():
    compiled = scale.warmup(np.float32, np.float32, 10, 2.0, BLOCK=16)
    with pytest.raises(AttributeError, match="no 'nonexistent'.*shared"):
        _ = compiled.metadata.nonexistent


def test_compiled_launch_checks_arguments_like_a_kernel_launch(rng):
    x = rng.standard_normal(50).astype(np.float32)
    y = np.zeros_like(x)
    compiled = scale.warmup(y, x, 50, 1.5, BLOCK=16)
    compiled[(tiles.cdiv(50, 16),)](y, x, 50, 1.5, 16)
    np.testing.assert_array_equal(y, x * np.float32(1.5))
    with pytest.raises(tiles.LaunchError):
        compiled[(1,)](y, x, 50)


def test_a_compiled_kernel_not_from_warmup_says_how_to_launch():
    compiled = scale.compile({"out_ptr": "*fp32", "in_ptr": "*fp32", "n": "i32", "factor": "fp32"},
                             {"BLOCK": 16})
    with pytest.raises(TypeError, match=r"kernel\[grid\]"):
        compiled[(1,)]


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None, reason="ptxas is not on PATH")
def test_cuda_register_count_comes_from_ptxas(monkeypatch):
    """Compile-only (no GPU needed): ptxas's register count, and the shared scratch of the
    cross-warp reductions, feed the softmax tutorial's occupancy formula."""
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90")
    compiled = rows_softmax.warmup(np.float32, np.float32, 8, 100, BLOCK=1024, num_stages=1, num_warps=8,
                                   grid=(1,), backend="cuda")
    assert 0 < compiled.n_regs <= 255 and compiled.n_spills == 0
    assert compiled.metadata.shared > 0
