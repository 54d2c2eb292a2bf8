"""tl.dot on tensor cores (mma.sync + ldmatrix): PTX checks everywhere, numerics on a GPU."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import toolchain

GPU, WHY = registry.status("cuda")
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
rng = np.random.default_rng(0)
EXAMPLES = Path(__file__).parents[3] / "examples"


@tiles.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr,
              TF32: tl.constexpr, TRANS_B: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, K, BK):
        ks = k + rk
        a = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0)
        if TRANS_B:  # b stored N x K: load a BN x BK tile and transpose it
            bt = tl.load(b_ptr + rn[:, None] * sbn + ks[None, :] * sbk,
                         mask=(rn[:, None] < N) & (ks[None, :] < K), other=0)
            b = tl.trans(bt)
        else:
            b = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn,
                        mask=(ks[:, None] < K) & (rn[None, :] < N), other=0)
        if TF32:
            acc = tl.dot(a, b, acc, input_precision="tf32")
        else:
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@tiles.jit
def pipelined_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sbk, scm,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Pointers and masks from the induction variable and loop invariants only: cp.async stages."""
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
    for k in range(0, K, BK):
        k = tl.multiple_of(k, BK)
        a = tl.load(a_base + k, mask=a_rows & (a_k < K - k), other=0.0)
        b = tl.load(b_base + k * sbk, mask=b_cols & (b_k < K - k), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tiles.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    bs = tl.arange(0, B)[:, None, None]
    ms = tl.arange(0, M)[None, :, None]
    ns = tl.arange(0, N)[None, None, :]
    ka = tl.arange(0, K)[None, None, :]
    kb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + bs * M * K + ms * K + ka)
    b = tl.load(b_ptr + bs * K * N + kb * N + ns)
    tl.store(c_ptr + bs * M * N + ms * N + ns, tl.dot(a, b))


@tiles.jit
def dot_f16_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, out_dtype=tl.float16))


@tiles.jit
def attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, N_CTX, stride_z, stride_h, stride_n,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """benchmarks/matmul.py's attention: S, P and the accumulator stay in MMA fragments."""
    block_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = (bh // H) * stride_z + (bh % H) * stride_h
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * stride_n + dims[None, :])
    scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start in range(0, N_CTX, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + keys[:, None] * stride_n + dims[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * stride_n + dims[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_n + dims[None, :], out.to(tl.float16))


def _attention(bm, bn, warps, d, n, heads=2, launch="gpu", stages=1):
    q, k, v = (rng.standard_normal((1, heads, n, d)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    args = (q, k, v, o, 0.3, heads, n, heads * n * d, n * d, d)
    meta = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)
    if launch is None:
        return attn_kernel.warmup(*args, backend="cuda", **meta)
    if launch == "sim":  # the lowering run on the numpy SIMT simulator
        from tiles.backends.cuda.simulator.simt import run
        ir = attn_kernel.warmup(*args, backend="cuda", **meta).ir
        run(ir, [x if isinstance(x, np.ndarray) else np.float32(x) if isinstance(x, float) else np.int32(x)
                 for x in args], (n // bm, heads), warps * 32, num_stages=stages)
    else:
        attn_kernel[(n // bm, heads)](*args, backend="cuda", **meta)
    s = (q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)) * 0.3
    p = np.exp(s - s.max(-1, keepdims=True))
    return _rel(o, (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32))


@pytest.mark.parametrize("bm,bn,warps,d,n", [(64, 32, 4, 32, 64), (128, 64, 8, 32, 128), (128, 32, 4, 16, 128)])
def test_attention_fragments_simulated(bm, bn, warps, d, n):
    """Fragment layouts end to end (row max/sum by shuffles, P repacked as the A operand,
    trans(k) staged as rows, q hoisted), checked on the CPU simulator."""
    assert _attention(bm, bn, warps, d, n, launch="sim") < 2e-3


def test_pipelined_simulated():
    a, b = _operands(96, 80, 160, np.float16)
    c = np.zeros((96, 80), np.float32)
    args = (a, b, c, 96, 80, 160, 160, 80, 80)
    ir = pipelined_kernel.warmup(*args, backend="cuda", BM=32, BN=16, BK=32, num_warps=4, num_stages=3).ir
    from tiles.backends.cuda.simulator.simt import run
    run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in args], (3, 5), 128, num_stages=3)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3



@pytest.mark.parametrize("stages", [2, 3])
def test_pipelined_mma_sync_several_chunks_per_thread_simulated(stages, monkeypatch):
    """mma.sync (the simulator offering no wgmma) with 64x64 A and B stages on 128 threads: each
    thread copies 4 chunks of each, rows 16 apart, addressed from its first chunk's place."""
    from tiles.backends.cuda.simulator import simt as sim_emitter
    monkeypatch.setattr(sim_emitter.SimEmitter, "wgmma_ok", lambda self: False)
    a, b = _operands(128, 64, 192, np.float16)
    c = np.zeros((128, 64), np.float32)
    args = (a, b, c, 128, 64, 192, 192, 64, 64)
    ir = pipelined_kernel.warmup(*args, backend="cuda", BM=64, BN=64, BK=64, num_warps=4,
                                 num_stages=stages).ir
    sim_emitter.run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in args], (2, 1), 128,
                    num_stages=stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3

def test_attention_ptx_stays_in_registers():
    """One K/V block per iteration: 4 barriers (stage K, MMAs, stage V, MMAs), row
    reductions by shuffles, P never written to local memory."""
    ptx = _sm90_ptx(_attention(128, 64, 8, 128, 256, launch=None).ir, 8)
    assert ptx.count("bar.sync") == 8 and "shfl.sync.bfly" in ptx
    assert ptx.count("mma.sync") == 128
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90").get("spill_stores", 0) == 0


@needs_gpu
@pytest.mark.parametrize("bm,bn,warps,d,n", [(64, 32, 4, 32, 64), (128, 64, 8, 64, 256), (64, 64, 4, 128, 128),
                                             (128, 32, 4, 32, 128)])
def test_attention_fragments(bm, bn, warps, d, n):
    assert _attention(bm, bn, warps, d, n) < 2e-3


def _sm90_ptx(ir, warps, stages=1):
    """PTX for sm_90 (mma.sync; sm_90a would take wgmma, see test_wgmma.py) whatever the GPU."""
    from tiles.backends.base import Options
    from tiles.backends.cuda import nvptx_target
    from tiles.backends.cuda.choices import lower_kernel
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90"), Options(warps, stages)), "sm_90")


def _operands(m, n, k, dtype):
    if dtype in (np.int8,):
        return (rng.integers(-100, 100, (m, k)).astype(np.int8),
                rng.integers(-100, 100, (k, n)).astype(np.int8))
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


def _run_mm(a, b, out_dtype, acc, bm=64, bn=64, bk=32, tf32=False, trans_b=False, warps=4, launch=True):
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), out_dtype)
    bmat = np.ascontiguousarray(b.T) if trans_b else b
    sbk, sbn = (1, k) if trans_b else (n, 1)
    args = (a, bmat, c, m, n, k, k, 1, sbk, sbn, n, 1)
    meta = dict(BM=bm, BN=bn, BK=bk, ACC=acc, TF32=tf32, TRANS_B=trans_b, num_warps=warps)
    if not launch:
        return mm_kernel.warmup(*args, backend="cuda", **meta)
    grid = (tiles.cdiv(m, bm), tiles.cdiv(n, bn))
    mm_kernel[grid](*args, backend="cuda", **meta)
    return c


def _rel(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)


PTX_CASES = [
    ("fp16", np.float16, np.float32, tl.float32, dict()),
    ("fp16-128x128x64-8w", np.float16, np.float32, tl.float32, dict(bm=128, bn=128, bk=64, warps=8)),
    ("fp16-128x128x32-4w", np.float16, np.float32, tl.float32, dict(bm=128, bn=128, bk=32)),
    ("tf32", np.float32, np.float32, tl.float32, dict(tf32=True)),
    ("int8", np.int8, np.int32, tl.int32, dict()),
    ("fp16-trans", np.float16, np.float32, tl.float32, dict(trans_b=True)),
]


@pytest.mark.parametrize("name,dt,out,acc,kw", PTX_CASES, ids=[c[0] for c in PTX_CASES])
def test_ptx_uses_mma(name, dt, out, acc, kw):
    a, b = _operands(128, 128, 64, dt)
    ptx = _sm90_ptx(_run_mm(a, b, out, acc, launch=False, **kw).ir, kw.get("warps", 4))
    assert "mma.sync.aligned" in ptx
    assert "ldmatrix" in ptx
    if toolchain.ptxas_path():
        info = toolchain.ptxas_info(ptx, "sm_90")
        if kw.get("bm", 64) == 64:  # default-sized tiles must not spill
            # fp16-trans on sm_90's mma.sync: ptxas (CUDA 13) keeps 8 bytes on the stack since
            # legalize.py made the LLVM IR 4x smaller; same registers (72), 0 local memory in the PTX.
            allowed = 8 if name == "fp16-trans" else 0
            assert info.get("spill_stores", 0) <= allowed, info


def test_accumulator_stays_in_mma_layout():
    """The K loop carries the accumulator in fragments: its body never moves fp32 accumulator
    fragments (pairs of floats) through local memory; the epilogue after the loop does."""
    a, b = _operands(128, 128, 64, np.float16)
    ll = _run_mm(a, b, np.float32, tl.float32, launch=False).asm["llir"]
    # 64x64 tile, 4 warps as 2x2, 2x4 fragments of 16x8 per warp: 16 pair stores, all in the epilogue
    assert ll.count("store <2 x float>") == 16
    assert "load <2 x float>" not in ll


def _pipelined(m, n, k, bm, bn, bk, warps, stages, launch=True):
    a, b = _operands(m, n, k, np.float16)
    c = np.zeros((m, n), np.float32)
    args = (a, b, c, m, n, k, k, n, n)
    meta = dict(BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)
    if not launch:
        return pipelined_kernel.warmup(*args, backend="cuda", **meta)
    pipelined_kernel[(tiles.cdiv(m, bm), tiles.cdiv(n, bn))](*args, backend="cuda", **meta)
    return _rel(c, a.astype(np.float32) @ b.astype(np.float32))


def test_ptx_pipelined():
    ptx = _sm90_ptx(_pipelined(128, 128, 64, 64, 64, 32, 4, 3, launch=False).ir, 4, 3)
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group 1" in ptx and "mma.sync" in ptx
    ptx1 = _sm90_ptx(_pipelined(128, 128, 64, 64, 64, 32, 4, 1, launch=False).ir, 4, 1)
    assert "cp.async" not in ptx1


@needs_gpu
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps,stages", [
    (128, 128, 64, 64, 64, 32, 4, 3), (100, 72, 200, 64, 64, 32, 4, 3), (256, 256, 512, 128, 128, 64, 8, 4),
    (64, 64, 16, 64, 64, 32, 4, 2), (96, 80, 160, 32, 16, 32, 4, 3),
    # wgmma on sm_90a: in-flight groups, 8-warp tiles split into two warpgroups, masked edges
    (256, 256, 512, 128, 128, 64, 4, 4), (300, 260, 200, 128, 256, 64, 8, 3), (130, 100, 200, 64, 64, 32, 4, 3),
    (512, 512, 256, 128, 128, 32, 8, 4)])
def test_pipelined(m, n, k, bm, bn, bk, warps, stages):
    assert _pipelined(m, n, k, bm, bn, bk, warps, stages) < 1e-3


def test_opencl_keeps_serial_dot():
    pytest.importorskip("pyopencl")
    ok, _ = registry.status("opencl")
    if not ok:
        pytest.skip("no OpenCL device")
    a, b = _operands(32, 32, 32, np.float16)
    c = np.zeros((32, 32), np.float32)
    mm_kernel[(1, 1)](a, b, c, 32, 32, 32, 32, 1, 32, 1, 32, 1, BM=32, BN=32, BK=32, ACC=tl.float32,
                      TF32=False, TRANS_B=False, backend="opencl")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps", [
    (128, 128, 64, 64, 64, 32, 4), (100, 70, 45, 64, 64, 32, 4), (256, 256, 256, 128, 128, 32, 4),
    (256, 256, 128, 128, 128, 64, 8), (16, 40, 64, 16, 16, 32, 4), (64, 16, 48, 32, 16, 16, 2)])
def test_fp16(m, n, k, bm, bn, bk, warps):
    a, b = _operands(m, n, k, np.float16)
    c = _run_mm(a, b, np.float32, tl.float32, bm=bm, bn=bn, bk=bk, warps=warps)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
def test_bf16():
    import ml_dtypes
    a, b = (x.astype(ml_dtypes.bfloat16) for x in _operands(96, 80, 64, np.float32))
    c = _run_mm(a, b, np.float32, tl.float32, bm=32, bn=16, bk=32)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
def test_tf32():
    a, b = _operands(100, 70, 45, np.float32)
    c = _run_mm(a, b, np.float32, tl.float32, tf32=True)
    assert _rel(c, a @ b) < 3e-3


@needs_gpu
def test_int8():
    a, b = _operands(100, 72, 96, np.int8)
    c = _run_mm(a, b, np.int32, tl.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@needs_gpu
def test_transposed_operand():
    a, b = _operands(100, 70, 45, np.float16)
    c = _run_mm(a, b, np.float32, tl.float32, trans_b=True)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


@needs_gpu
def test_fp16_accumulator():
    a, b = _operands(64, 64, 64, np.float16)
    c = _run_mm(a, b, np.float16, tl.float16)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-2


@needs_gpu
def test_out_dtype_float16():
    a, b = _operands(32, 64, 32, np.float16)
    c = np.zeros((32, 64), np.float16)
    dot_f16_kernel[(1,)](a, b, c, 32, 64, 32, backend="cuda")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


@needs_gpu
def test_batched():
    a = rng.standard_normal((2, 32, 32)).astype(np.float16)
    b = rng.standard_normal((2, 32, 16)).astype(np.float16)
    c = np.zeros((2, 32, 16), np.float32)
    bmm_kernel[(1,)](a, b, c, 2, 32, 16, 32, backend="cuda")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 1e-3


def _example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_gpu
@pytest.mark.parametrize("name", ["03_matmul", "06_fused_attention"])
def test_examples_use_tensor_cores(name, monkeypatch):
    monkeypatch.setenv("TILES_BACKEND", "cuda")
    mod = _example(name)
    mod.main(backend="cuda")
    kernel = mod.matmul_kernel if name == "03_matmul" else mod.attention_forward_kernel
    ptx = [c.asm["ptx"] for c in kernel.cache.values()]
    assert ptx and all("mma.sync" in p or "wgmma.mma_async" in p for p in ptx)


