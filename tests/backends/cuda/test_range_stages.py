"""tl.range(num_stages=) reaches the CUDA pipeliner and overrides the launch's num_stages for its loop."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel

GPU, WHY = registry.status("cuda")


@tiles.jit
def staged_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sbk, scm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_base = a_ptr + rm[:, None] * sam + rk[None, :]
    b_base = b_ptr + rk[:, None] * sbk + rn[None, :]
    a_k = tl.broadcast_to(rk[None, :], (BM, BK))
    a_rows = (rm[:, None] < M) & (rk[None, :] >= 0)
    b_k = tl.broadcast_to(rk[:, None], (BK, BN))
    b_cols = (rn[None, :] < N) & (rk[:, None] >= 0)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        k = tl.multiple_of(k, BK)
        a = tl.load(a_base + k, mask=a_rows & (a_k < K - k), other=0.0)
        b = tl.load(b_base + k * sbk, mask=b_cols & (b_k < K - k), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _args(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.zeros((m, n), np.float32), m, n, k, k, n, n


def _ptx(loop_stages, launch_stages):
    ir = staged_matmul.warmup(*_args(128, 128, 64, 0), backend="cuda", BM=64, BN=64, BK=32, STAGES=loop_stages,
                              num_warps=4, num_stages=launch_stages).ir
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90"), Options(4, launch_stages)), "sm_90")


def test_loop_num_stages_overrides_launch():
    assert "cp.async.cg.shared.global" in _ptx(3, 1)  # the loop asks for 3 stages, the launch for none
    assert "cp.async" not in _ptx(1, 3)  # the loop turns pipelining off, whatever the launch says


@pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
@pytest.mark.parametrize("loop_stages", [1, 3])
def test_staged_loop_matches_numpy_on_gpu(loop_stages):
    args = _args(100, 72, 200, 5 + loop_stages)
    staged_matmul[(tiles.cdiv(100, 64), tiles.cdiv(72, 64))](*args, backend="cuda", BM=64, BN=64, BK=32,
                                                            STAGES=loop_stages, num_warps=4, num_stages=1)
    a, b, c = args[:3]
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=2e-2, atol=2e-2)
