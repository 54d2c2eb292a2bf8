"""Triton tutorial 08 style: grouped GEMM; the matrices' device addresses live in int64 arrays and
are loaded and cast with ``.to(tl.pointer_type(tl.float16))``; a fixed number of programs walks
the tiles of every problem."""

import numpy as np
import pytest
from compat_harness import close, refuses_pointers_from_integers

import tiles
import tiles.language as tl
from tiles.core.errors import UnsupportedError


@tiles.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds, group_size,
                          NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                a = tl.load(a_ptrs, mask=(offs_am[:, None] < gm) & (offs_k[None, :] < k - kk * BLOCK_SIZE_K),
                            other=0.0)
                b = tl.load(b_ptrs, mask=(offs_k[:, None] < k - kk * BLOCK_SIZE_K) & (offs_bn[None, :] < gn),
                            other=0.0)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c, mask=(offs_cm[:, None] < gm) & (offs_cn[None, :] < gn))
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


def _addresses(arrays):
    """Device addresses as the wrapper would take them from torch's data_ptr()."""
    if tiles.backends.registry.default().name == "cuda":
        import pycuda.autoprimaryctx  # noqa: F401, PLC0415  (pycuda's calls need the primary context current)
        import pycuda.gpuarray as gpuarray  # noqa: PLC0415  (only where CUDA runs)

        on_device = [gpuarray.to_gpu(a) for a in arrays]
        return np.array([int(d.gpudata) for d in on_device], np.int64), on_device
    return np.array([a.ctypes.data for a in arrays], np.int64), arrays


def check(rng):
    shapes = [(33, 20, 17), (16, 40, 32), (5, 7, 9)]
    A = [rng.standard_normal((m, k)).astype(np.float16) for m, n, k in shapes]
    B = [rng.standard_normal((k, n)).astype(np.float16) for m, n, k in shapes]
    C = [np.zeros((m, n), np.float16) for m, n, k in shapes]
    a_addrs, a_keep = _addresses(A)
    b_addrs, b_keep = _addresses(B)
    c_addrs, c_keep = _addresses(C)
    sizes = np.array([s for m, n, k in shapes for s in (m, n, k)], np.int32)
    lds = np.array([s for m, n, k in shapes for s in (k, n, n)], np.int32)
    grid = lambda META: (META["NUM_SM"],)  # noqa: E731
    if refuses_pointers_from_integers():
        with pytest.raises(UnsupportedError, match="int_to_ptr is not supported on opencl"):
            grouped_matmul_kernel[grid](a_addrs, b_addrs, c_addrs, sizes, lds, len(shapes),
                                        NUM_SM=4, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
        return
    grouped_matmul_kernel[grid](a_addrs, b_addrs, c_addrs, sizes, lds, len(shapes),
                                NUM_SM=4, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    results = [c.get() if hasattr(c, "get") else c for c in c_keep]
    for a, b, c in zip(A, B, results):
        close(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)
    assert a_keep is not None and b_keep is not None
