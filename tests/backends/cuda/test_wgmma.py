"""tl.dot as Hopper wgmma: PTX for sm_90a and the numpy simulator everywhere, numerics on an H100/H200."""

import numpy as np
import pytest
from test_tensorcore import (
    _attention,
    _operands,
    _rel,
    _run_mm,
    needs_gpu,
    pipelined_kernel,
)

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel
from tiles.backends.cuda.ptx_loops import mma_loop

rng = np.random.default_rng(1)


def _ptx(ir, warps, stages, arch="sm_90a", tma=True):
    options = Options(warps, stages) if tma else Options(warps, stages).without("tma")
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target(arch), options), arch)


def _pipelined_ir(m, n, k, bm, bn, bk, warps, stages):
    a, b = _operands(m, n, k, np.float16)
    args = (a, b, np.zeros((m, n), np.float32), m, n, k, k, n, n)
    return pipelined_kernel.warmup(*args, backend="cuda", BM=bm, BN=bn, BK=bk, num_warps=warps,
                                   num_stages=stages).ir


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (64, 64, 32, 4, 2)])
def test_pipelined_ptx_uses_wgmma(bm, bn, bk, warps, stages):
    ptx = _ptx(_pipelined_ir(256, 256, 256, bm, bn, bk, warps, stages), warps, stages)
    assert "wgmma.mma_async.sync.aligned.m64n" in ptx and "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert "cp.async.cg.shared.global" in ptx
    assert "fence.proxy.async" in mma_loop(ptx), "cp.async (generic proxy) -> wgmma (async proxy) needs the fence"
    # the last group of MMAs stays in flight across iterations (two stages are enough: the copies
    # go after the wait, into the stage the completed group read)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0


def test_sm90_without_a_keeps_mma_sync():
    ptx = _ptx(_pipelined_ir(256, 256, 256, 128, 128, 64, 4, 3), 4, 3, arch="sm_90")
    assert "mma.sync" in ptx and "wgmma" not in ptx


def test_attention_ptx_uses_wgmma():
    ir = _attention(64, 64, 4, 128, 256, launch=None).ir
    ptx = _ptx(ir, 4, 1)
    assert ptx.count("wgmma.mma_async") == 8 + 4  # S: 128/16 k-steps of n64; O: 64/16 of n128
    assert "shfl.sync.bfly" in ptx
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0


@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps,stages", [
    (130, 100, 200, 64, 64, 32, 4, 3), (128, 96, 96, 64, 32, 16, 4, 4), (128, 128, 128, 128, 64, 64, 8, 3)])
def test_pipelined_simulated(m, n, k, bm, bn, bk, warps, stages):
    """Swizzled stages, descriptors and in-flight groups on the simulator (which reads wgmma
    operands when the group completes, so overwriting a stage too early gives wrong sums)."""
    from tiles.backends.cuda.simulator.simt import run
    a, b = _operands(m, n, k, np.float16)
    c = np.zeros((m, n), np.float32)
    args = (a, b, c, m, n, k, k, n, n)
    ir = pipelined_kernel.warmup(*args, backend="cuda", BM=bm, BN=bn, BK=bk, num_warps=warps,
                                 num_stages=stages).ir
    run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in args],
        (-(-m // bm), -(-n // bn)), warps * 32, num_stages=stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@pytest.mark.parametrize("bm,bn,warps,d,n,stages", [(64, 64, 4, 64, 128, 1), (128, 32, 8, 32, 128, 1),
                                                    (64, 64, 4, 64, 256, 3), (128, 32, 8, 32, 128, 2)])
def test_attention_simulated(bm, bn, warps, d, n, stages):
    """S = q @ trans(k) with q hoisted into registers, P repacked as A; with stages, K and V
    come through cp.async stages."""
    assert _attention(bm, bn, warps, d, n, launch="sim", stages=stages) < 2e-3


def test_attention_ptx_pipelined():
    ir = _attention(64, 64, 4, 128, 256, launch=None, stages=3).ir
    ptx = _ptx(ir, 4, 3)
    assert "cp.async.cg.shared.global" in ptx and ptx.count("wgmma.mma_async") == 12
    assert "ld.global" not in ptx.split("wgmma.fence")[1]  # K and V never pass through registers


@needs_gpu
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_unpipelined_gpu(dt, trans_b):
    import ml_dtypes
    np_dt = np.float16 if dt == "float16" else ml_dtypes.bfloat16
    a, b = (x.astype(np_dt) for x in _operands(200, 150, 96, np.float32))
    c = _run_mm(a, b, np.float32, tl.float32, bm=64, bn=64, bk=32, trans_b=trans_b)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
@pytest.mark.parametrize("bm,bn,warps,d,n,stages", [(64, 64, 4, 128, 256, 1), (128, 64, 8, 64, 256, 1),
                                                    (64, 32, 4, 32, 64, 1), (64, 64, 4, 128, 512, 3),
                                                    (128, 64, 8, 64, 256, 2), (128, 128, 8, 128, 512, 2)])
def test_attention_gpu(bm, bn, warps, d, n, stages):
    compiled = _attention(bm, bn, warps, d, n, launch=None, stages=stages)
    assert "wgmma.mma_async" in compiled.asm["ptx"] or compiled.metadata["arch"] != "sm_90a"
    assert _attention(bm, bn, warps, d, n, stages=stages) < 2e-3



@tiles.jit
def desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Tensor descriptors: bounds-checked tiles whose pointers and masks come from the loop index."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    c_desc.store([off_m, off_n], acc)


def _desc_case(m, n, k):
    a, b = _operands(m, n, k, np.float16)
    return a, b, np.zeros((m, n), np.float32)


def test_descriptor_loads_are_pipelined(monkeypatch):
    """Without TMA, descriptor tiles become 16-byte cp.async copies: the loop index's divisibility
    and the unit stride keep their runs contiguous (lowering/axisinfo.py)."""
    monkeypatch.setenv("TILES_TMA", "0")
    a, b, c = _desc_case(130, 96, 256)
    ir = desc_matmul.warmup(a, b, c, 130, 96, 256, backend="cuda", BM=64, BN=64, BK=32, num_warps=4,
                            num_stages=3).ir
    ptx = _ptx(ir, 4, 3, tma=False)
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx
    from tiles.backends.cuda.simulator.simt import run
    run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in (a, b, c, 130, 96, 256)], (3, 2), 128,
        num_stages=3)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
@pytest.mark.parametrize("tma", ["0", "1"])
@pytest.mark.parametrize("m,n,k", [(130, 96, 256), (256, 256, 512), (100, 72, 200)])
def test_descriptor_matmul_gpu(monkeypatch, m, n, k, tma):
    monkeypatch.setenv("TILES_TMA", tma)
    a, b, c = _desc_case(m, n, k)
    desc_matmul[(tiles.cdiv(m, 64), tiles.cdiv(n, 64))](a, b, c, m, n, k, BM=64, BN=64, BK=32, num_warps=4,
                                                        num_stages=3, backend="cuda")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


def test_fp16_accumulator_pipelined_simulated():
    """A float16 accumulator is converted right after each MMA group, so no group may stay in
    flight across iterations (the conversion would read registers still being written)."""
    from tiles.backends.cuda.simulator.simt import run
    a, b = _operands(64, 64, 64, np.float16)
    c = np.zeros((64, 64), np.float16)
    names = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")
    given = dict(zip(names, (a, b, c, 64, 64, 64, 64, 1, 64, 1, 64, 1)))
    ir = _run_mm(a, b, np.float16, tl.float16, launch=False).ir
    ptx = _ptx(ir, 4, 3)
    assert "cp.async.cg" in ptx and "wgmma.wait_group.sync.aligned 1;" not in ptx
    args = [given[p.name] for p in ir.params]  # strides of 1 were specialized away
    run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in args], (1, 1), 128, num_stages=3)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-2


@tiles.jit
def causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention of one head: the mask is an index expression, recomputed per fragment."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + dims[None, :])
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start in range(0, (tl.program_id(0) + 1) * BLOCK_M, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + keys[:, None] * HEAD_DIM + dims[None, :])
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((rows[:, None] >= keys[None, :]) & (keys[None, :] < N_CTX), s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + keys[:, None] * HEAD_DIM + dims[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rows[:, None] * HEAD_DIM + dims[None, :], (acc / l_i[:, None]).to(tl.float16))


def _causal(bm, bn, warps, d, n, stages, launch):
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    args = (q, k, v, o, 0.5, n)
    meta = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)
    if launch == "ptx":
        return _ptx(causal_kernel.warmup(*args, backend="cuda", **meta).ir, warps, stages)
    if launch == "sim":
        from tiles.backends.cuda.simulator.simt import run
        ir = causal_kernel.warmup(*args, backend="cuda", **meta).ir
        run(ir, [x if isinstance(x, np.ndarray) else np.float32(x) if isinstance(x, float) else np.int32(x)
                 for x in args], (n // bm,), warps * 32, num_stages=stages)
    else:
        causal_kernel[(n // bm,)](*args, backend="cuda", **meta)
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * 0.5 * np.log(2)
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return _rel(o, (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32))


def test_causal_attention_stays_in_registers():
    ptx = _causal(64, 64, 4, 64, 256, 3, "ptx")
    assert "cp.async.cg.shared.global" in ptx and "ld.global" not in ptx.split("wgmma.fence")[1]
    loop = ptx.split("wgmma.fence")[1].split("bra")[0]
    assert "st.shared" not in loop  # S is masked in fragments, not converted through local memory


@pytest.mark.parametrize("wgmma", [True, False])
@pytest.mark.parametrize("bm,bn,warps,stages", [(64, 64, 4, 3), (64, 32, 4, 1), (128, 64, 8, 2)])
def test_causal_attention_simulated(bm, bn, warps, stages, wgmma, monkeypatch):
    """Both instruction families (mma.sync when the simulator offers no wgmma)."""
    from tiles.backends.cuda.simulator import simt as sim_emitter
    monkeypatch.setattr(sim_emitter.SimEmitter, "wgmma_ok", lambda self: wgmma)
    assert _causal(bm, bn, warps, 32, 256, stages, "sim") < 2e-3


@needs_gpu
@pytest.mark.parametrize("bm,bn,warps,stages", [(64, 64, 4, 3), (128, 64, 8, 2), (128, 128, 8, 2)])
def test_causal_attention_gpu(bm, bn, warps, stages):
    assert _causal(bm, bn, warps, 128, 512, stages, "gpu") < 2e-3
