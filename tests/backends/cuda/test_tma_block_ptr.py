"""Block-pointer loads of a ``tl.dot`` loop copied by TMA (``cuda/hopper/tma_rebase.py``).

The kernels are in the form of Triton's attention and block-pointer matmul tutorials: a base
offset per head (``Q + off_z * stride_qz + off_h * stride_qh``), K read down its first axis
(order ``(0, 1)``), pointers advanced in the loop, and no or some ``boundary_check``.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import toolchain
from tiles.backends.cuda.hopper.tma_spec import MapSpec, Source
from tiles.backends.cuda.tensor_map import encode_arguments

GPU, WHY = registry.status("cuda")
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")


@tiles.jit
def block_attention(Q, K, V, Out, sm_scale, stride_z, stride_h, stride_n, stride_d, H, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off = (off_hz // H).to(tl.int64) * stride_z + (off_hz % H).to(tl.int64) * stride_h
    q_blocks = tl.make_block_ptr(Q + off, (N_CTX, HEAD_DIM), (stride_n, stride_d), (start_m * BLOCK_M, 0),
                                 (BLOCK_M, HEAD_DIM), (1, 0))
    k_blocks = tl.make_block_ptr(K + off, (HEAD_DIM, N_CTX), (stride_d, stride_n), (0, 0),
                                 (HEAD_DIM, BLOCK_N), (0, 1))
    v_blocks = tl.make_block_ptr(V + off, (N_CTX, HEAD_DIM), (stride_n, stride_d), (0, 0),
                                 (BLOCK_N, HEAD_DIM), (1, 0))
    o_blocks = tl.make_block_ptr(Out + off, (N_CTX, HEAD_DIM), (stride_n, stride_d), (start_m * BLOCK_M, 0),
                                 (BLOCK_M, HEAD_DIM), (1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = tl.load(q_blocks)
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        qk = tl.dot(q, tl.load(k_blocks)) * sm_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), tl.load(v_blocks), acc * alpha[:, None])
        m_i = m_ij
        k_blocks = tl.advance(k_blocks, (0, BLOCK_N))
        v_blocks = tl.advance(v_blocks, (BLOCK_N, 0))
    tl.store(o_blocks, (acc / l_i[:, None]).to(tl.float16))


@tiles.jit
def block_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_blocks = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_blocks = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a_blocks, boundary_check=(0, 1)), tl.load(b_blocks, boundary_check=(0, 1)))
        a_blocks = tl.advance(a_blocks, (0, BK))
        b_blocks = tl.advance(b_blocks, (BK, 0))
    c_blocks = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_blocks, acc.to(tl.float16), boundary_check=(0, 1))


def _attention_args(rng, z, h, n_ctx, d, pad=0):
    """Q, K, V, Out laid out (z, h, n_ctx, d) with ``pad`` extra elements after each head."""
    head = n_ctx * d + pad
    arrays = [rng.standard_normal(z * h * head).astype(np.float16) for _ in range(3)]
    out = np.full(z * h * head, np.nan, np.float16)
    return arrays, out, (h * head, head, d, 1)


def _heads(flat, z, h, n_ctx, d, pad=0):
    return flat.reshape(z * h, n_ctx * d + pad)[:, :n_ctx * d].reshape(z, h, n_ctx, d).astype(np.float32)


def _sim_args(compiled, args):
    """The launch's values of the kernel's run-time parameters (a stride of 1 is a constant)."""
    names = list(block_attention.arg_names if compiled.name == "block_attention" else block_matmul.arg_names)
    by_name = dict(zip(names, args))
    return [x if isinstance(x, np.ndarray) else np.float32(x) if isinstance(x, float) else np.int32(x)
            for x in (by_name[p.name] for p in compiled.ir.params)]


def _attention_reference(q, k, v, scale, causal):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_attention_k_and_v_are_staged_by_tma(tma_on, rng):
    (q, k, v), o, strides = _attention_args(rng, 1, 2, 128, 64)
    c = block_attention.warmup(q, k, v, o, 0.125, *strides, 2, 128, HEAD_DIM=64, BLOCK_M=64, BLOCK_N=64,
                               CAUSAL=False, num_warps=4, num_stages=3, backend="cuda", grid=(1,))
    ptx = c.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "cp.async.cg" not in ptx
    specs = [MapSpec.from_json(m) for m in c.metadata["tensor_maps"]]
    assert sorted(s.base for s in specs) == [1, 2]  # K and V; Q is loaded before the loop
    for s in specs:  # the head offset's factors: the host checks they are whole rows
        assert s.multiples == (Source(5), Source(6)) and s.strides[-1] == Source(None, 1)
    if shutil.which("ptxas"):
        toolchain.ptxas_info(ptx, "sm_90a")


@pytest.mark.parametrize("causal,bn,stages", [(False, 64, 3), (True, 32, 2)])
def test_block_pointer_attention_with_tma_simulated(tma_on, rng, causal, bn, stages):
    from tiles.backends.cuda.simulator.tma import run
    z, h, n_ctx, d = 1, 2, 128, 64
    (q, k, v), o, strides = _attention_args(rng, z, h, n_ctx, d)
    args = (q, k, v, o, 0.125, *strides, h, n_ctx)
    c = block_attention.warmup(*args, HEAD_DIM=d, BLOCK_M=64, BLOCK_N=bn, CAUSAL=causal, num_warps=4,
                               num_stages=stages, backend="cuda", grid=(1,))
    assert "cp.async.bulk.tensor" in c.asm["ptx"]
    sims = run(c.ir, _sim_args(c, args), (n_ctx // 64, z * h), 128, num_stages=stages)
    assert all(s.loads for s in sims)
    want = _attention_reference(*(_heads(x, z, h, n_ctx, d) for x in (q, k, v)), 0.125, causal)
    np.testing.assert_allclose(_heads(o, z, h, n_ctx, d), want, atol=3e-3, rtol=1e-2)


def test_a_bounded_row_axis_keeps_an_offset_base_on_pointers(tma_on, rng):
    """With boundary_check on the rows, a map from the parameter would bound the wrong rows."""
    @tiles.jit
    def checked_rows(X, W, Out, stride, off, N: tl.constexpr, BLOCK: tl.constexpr):
        x_blocks = tl.make_block_ptr(X + off, (BLOCK, N), (stride, 1), (0, 0), (BLOCK, 64), (1, 0))
        w_blocks = tl.make_block_ptr(W, (N, 64), (64, 1), (0, 0), (64, 64), (1, 0))
        acc = tl.zeros((BLOCK, 64), dtype=tl.float32)
        for _ in range(0, N, 64):
            acc += tl.dot(tl.load(x_blocks, boundary_check=(0,)), tl.load(w_blocks))
            x_blocks = tl.advance(x_blocks, (0, 64))
            w_blocks = tl.advance(w_blocks, (64, 0))
        tl.store(Out + tl.arange(0, BLOCK)[:, None] * 64 + tl.arange(0, 64)[None, :], acc)
    x, w = rng.standard_normal(64 * 128).astype(np.float16), rng.standard_normal(128 * 64).astype(np.float16)
    out = np.zeros((64, 64), np.float32)
    c = checked_rows.warmup(x, w, out, 128, 0, N=128, BLOCK=64, num_warps=4, num_stages=2, backend="cuda",
                            grid=(1,))
    assert 0 not in [MapSpec.from_json(m).base for m in c.metadata.get("tensor_maps", ())]  # X


def test_a_loop_tma_does_not_take_keeps_its_block_pointers_as_traced(tma_on, rng):
    """K through a block pointer with a per-head base, V through a pointer tile (which keeps the loop
    on cp.async): no tensor map, and the K block pointer rewritten for TMA and then restored still
    reads the right rows."""
    @tiles.jit
    def mixed(Q, K, V, Out, stride_h, N_CTX: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
        off = tl.program_id(0).to(tl.int64) * stride_h
        rows, cols = tl.arange(0, BLOCK), tl.arange(0, D)
        q = tl.load(Q + off + rows[:, None] * D + cols[None, :])
        k_blocks = tl.make_block_ptr(K + off, (D, N_CTX), (1, D), (0, 0), (D, BLOCK), (0, 1))
        acc = tl.zeros((BLOCK, D), dtype=tl.float32)
        for start in range(0, N_CTX, BLOCK):
            p = tl.dot(q, tl.load(k_blocks)).to(tl.float16)
            acc = tl.dot(p, tl.load(V + off + (start + rows)[:, None] * D + cols[None, :]), acc)
            k_blocks = tl.advance(k_blocks, (0, BLOCK))
        tl.store(Out + off + rows[:, None] * D + cols[None, :], acc.to(tl.float16))
    heads, n_ctx, d, block = 2, 128, 64, 64
    q, k, v = ((rng.standard_normal(heads * n_ctx * d) / 4).astype(np.float16) for _ in range(3))
    out = np.zeros_like(q)
    args = (q, k, v, out, n_ctx * d)
    c = mixed.warmup(*args, N_CTX=n_ctx, D=d, BLOCK=block, num_warps=4, num_stages=2, backend="cuda", grid=(1,))
    assert not c.metadata.get("tensor_maps") and "cp.async.cg" in c.asm["ptx"]
    from tiles.backends.cuda.simulator.tma import run
    run(c.ir, [*args[:4], np.int32(args[4])], (heads,), 128, num_stages=2)
    qf, kf, vf = (x.reshape(heads, n_ctx, d).astype(np.float32) for x in (q, k, v))
    p = (qf[:, :block] @ np.swapaxes(kf, 1, 2)).astype(np.float16).astype(np.float32)
    want = sum(p[:, :, s:s + block] @ vf[:, s:s + block] for s in range(0, n_ctx, block))
    np.testing.assert_allclose(out.reshape(heads, n_ctx, d)[:, :block].astype(np.float32), want,
                               atol=0.05, rtol=0.02)


def test_the_host_refuses_a_map_whose_base_offset_is_not_whole_rows():
    spec = MapSpec(0, "float16", 2, (Source(None, 2**31 - 1), Source(None, 64)), (Source(1), Source(None, 1)),
                   (64, 64), multiples=(Source(2),))
    assert encode_arguments(spec, [0, 64, 64 * 100], 1 << 20) is not None
    assert encode_arguments(spec, [0, 64, 64 * 100 + 8], 1 << 20) is None  # -> the kernel without TMA


def test_block_pointer_matmul_with_boundary_checks_takes_tma(tma_on, rng):
    m, n, k = 100, 72, 200
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c_out = np.zeros((m, n), np.float16)
    args = (a, b, c_out, m, n, k, k, 1, n, 1, n, 1)
    compiled = block_matmul.warmup(*args, BM=64, BN=64, BK=32, num_warps=4, num_stages=3, backend="cuda",
                                   grid=(1,))
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"]
    from tiles.backends.cuda.simulator.tma import run
    run(compiled.ir, _sim_args(compiled, args), (2, 2), 128, num_stages=3)
    np.testing.assert_allclose(c_out.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               atol=0.1, rtol=1e-2)


@needs_gpu
@pytest.mark.parametrize("pad", [0, 8])
@pytest.mark.parametrize("causal", [False, True])
def test_block_pointer_attention_matches_torch(tma_on, monkeypatch, pad, causal):
    """pad=8: each head starts 8 elements past a whole row, so the map cannot be based at the
    parameter and the launch runs the kernel compiled without TMA."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    z, h, n_ctx, d = 2, 3, 512, 64
    gen = torch.Generator(device="cuda").manual_seed(7 + pad)
    head = n_ctx * d + pad
    q, k, v = (torch.randn(z * h * head, device="cuda", generator=gen).half() for _ in range(3))
    o = torch.full_like(q, float("nan"))
    block_attention[(n_ctx // 128, z * h)](q, k, v, o, 0.125, h * head, head, d, 1, h, n_ctx, HEAD_DIM=d,
                                           BLOCK_M=128, BLOCK_N=64, CAUSAL=causal, num_warps=8, num_stages=3,
                                           backend="cuda")

    def heads(x):
        return x.view(z * h, head)[:, :n_ctx * d].reshape(z, h, n_ctx, d).float()
    want = torch.nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v), scale=0.125,
                                                            is_causal=causal)
    torch.testing.assert_close(heads(o), want, atol=2e-2, rtol=2e-2)


@needs_gpu
def test_a_launch_whose_heads_are_not_whole_rows_runs_without_tma(tma_on, monkeypatch):
    """The same shapes and strides as a launch TMA served, but heads 16 elements apart from
    whole rows: the maps' check differs, so this launch must not reuse the first one's maps."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    z, h, n_ctx, d = 1, 2, 256, 64
    gen = torch.Generator(device="cuda").manual_seed(11)
    for pad in (0, 16):
        head = n_ctx * d + pad
        q, k, v = (torch.randn(z * h * head, device="cuda", generator=gen).half() for _ in range(3))
        o = torch.full_like(q, float("nan"))
        block_attention[(n_ctx // 128, z * h)](q, k, v, o, 0.125, h * head, head, d, 1, h, n_ctx, HEAD_DIM=d,
                                               BLOCK_M=128, BLOCK_N=64, CAUSAL=False, num_warps=8,
                                               num_stages=3, backend="cuda")

        def heads(x, head=head):
            return x.view(z * h, head)[:, :n_ctx * d].reshape(z, h, n_ctx, d).float()
        want = torch.nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v), scale=0.125)
        torch.testing.assert_close(heads(o), want, atol=2e-2, rtol=2e-2)


@needs_gpu
def test_block_pointer_matmul_matches_torch(tma_on, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    m, n, k = 300, 264, 520
    gen = torch.Generator(device="cuda").manual_seed(3)
    a, b = (torch.randn(s, device="cuda", generator=gen).half() for s in ((m, k), (k, n)))
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    block_matmul[(triton_cdiv(m, 128), triton_cdiv(n, 128))](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
                                                             BM=128, BN=128, BK=64, num_warps=8, num_stages=3,
                                                             backend="cuda")
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.2, rtol=2e-2)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
