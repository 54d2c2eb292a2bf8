"""tl.range's keyword options (Triton 3.x's signature): recorded on the loop, never change results."""

import inspect

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.attrs import Loop
from tiles.core.errors import CompilationError
from tiles.core.ops import Op


@tiles.jit
def ranged_sum(x_ptr, out_ptr, n, STAGES: tl.constexpr, UNROLL: tl.constexpr, FLAG: tl.constexpr):
    acc = 0.0
    for i in tl.range(0, n, 1, num_stages=STAGES, loop_unroll_factor=UNROLL, disallow_acc_multi_buffer=FLAG,
                      flatten=FLAG, warp_specialize=FLAG, disable_licm=FLAG):
        acc += tl.load(x_ptr + i) * 2.0
    tl.store(out_ptr, acc)


@tiles.jit
def plain_range(x_ptr, out_ptr, n):
    acc = 0.0
    for i in tl.range(n):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@tiles.jit
def static_steps(x_ptr, out_ptr):
    acc = 0.0
    for i in tl.static_range(1, 8, step=3):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@tiles.jit
def bad_stages(x_ptr, out_ptr, n):
    for i in tl.range(0, n, num_stages=n):
        tl.store(out_ptr + i, tl.load(x_ptr + i))


def _fors(ir):
    return [i for i in ir.walk() if i.op is Op.FOR]


def test_keywords_match_triton_3():
    params = list(inspect.signature(tl.range).parameters)
    assert params == ["arg1", "arg2", "step", "num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer",
                      "flatten", "warp_specialize", "disable_licm"]
    assert list(inspect.signature(tl.static_range).parameters) == ["arg1", "arg2", "step"]


@pytest.mark.backends("interpreter")  # names its backend
@pytest.mark.parametrize("stages, unroll, flag", [(3, 2, True), (1, None, False), (0, 4, True)])
def test_options_reach_the_ir_and_results_do_not_change(stages, unroll, flag):
    x = np.random.default_rng(11).standard_normal(37).astype(np.float32)
    out = np.zeros(1, np.float32)
    ranged_sum[(1,)](x, out, 37, STAGES=stages, UNROLL=unroll, FLAG=flag, backend="interpreter")
    np.testing.assert_allclose(out[0], (x * 2).sum(dtype=np.float32), rtol=1e-5)
    ir = ranged_sum.warmup(x, out, 37, STAGES=stages, UNROLL=unroll, FLAG=flag, backend="interpreter").ir
    (loop,) = _fors(ir)
    assert loop.attrs == Loop(stages, unroll, flag, flag, flag, flag)


@pytest.mark.backends("interpreter")  # names its backend
def test_loop_without_options_has_no_attrs():
    x = np.random.default_rng(12).standard_normal(5).astype(np.float32)
    out = np.zeros(1, np.float32)
    plain_range[(1,)](x, out, 5, backend="interpreter")
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float32), rtol=1e-6)
    (loop,) = _fors(plain_range.warmup(x, out, 5, backend="interpreter").ir)
    assert loop.attrs is None


@pytest.mark.backends("interpreter")  # names its backend
def test_static_range_step_keyword():
    x = np.random.default_rng(13).standard_normal(8).astype(np.float32)
    out = np.zeros(1, np.float32)
    static_steps[(1,)](x, out, backend="interpreter")
    np.testing.assert_allclose(out[0], x[1] + x[4] + x[7], rtol=1e-6)


@pytest.mark.backends("interpreter")  # names its backend
def test_run_time_num_stages_is_refused():
    x = np.random.default_rng(14).standard_normal(4).astype(np.float32)
    with pytest.raises(CompilationError, match=r"num_stages=\.\.\.\) must be a compile-time integer"):
        bad_stages[(1,)](x, np.zeros(4, np.float32), 4, backend="interpreter")


def _unroll_args():
    x = np.random.default_rng(15).standard_normal(37).astype(np.float32)
    return x, np.zeros(1, np.float32), 37


@pytest.mark.backends("interpreter")  # compiles for cuda without a GPU
def test_loop_unroll_factor_reaches_llvm():
    from tiles.backends.cuda import toolchain
    plain = ranged_sum.warmup(*_unroll_args(), STAGES=None, UNROLL=None, FLAG=False, backend="cuda")
    unrolled = ranged_sum.warmup(*_unroll_args(), STAGES=None, UNROLL=4, FLAG=False, backend="cuda")
    assert "llvm.loop" not in plain.asm["llir"]
    assert '!{!"llvm.loop.unroll.count", i32 4}' in unrolled.asm["llir"]
    if toolchain.ptxas_path():
        toolchain.ptxas_info(unrolled.asm["ptx"], unrolled.metadata["arch"])


@pytest.mark.backends("opencl")
def test_loop_unroll_factor_reaches_opencl():
    from tiles.backends import registry
    ok, why = registry.status("opencl")
    if not ok:
        pytest.skip(f"OpenCL backend unavailable: {why}")
    x, out, n = _unroll_args()
    compiled = ranged_sum.warmup(x, out, n, STAGES=None, UNROLL=4, FLAG=False, backend="opencl")
    assert "#pragma unroll 4" in compiled.asm["opencl"]
    ranged_sum[(1,)](x, out, n, STAGES=None, UNROLL=4, FLAG=False, backend="opencl")
    np.testing.assert_allclose(out[0], (x * 2).sum(dtype=np.float32), rtol=1e-5)
