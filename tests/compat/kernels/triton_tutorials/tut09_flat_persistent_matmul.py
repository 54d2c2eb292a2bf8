"""Triton tutorial 09 style, the *flattened* persistent matmul: one loop over every (tile, k step)
pair a program owns; the k counter wraps with ``tl.where``, the next tile is chosen under
``if ki == 0:`` through a ``@jit`` helper returning a tuple, and the tile is stored (its type from
``c_ptr.dtype.element_ty``) and the accumulator reset under ``if ki == k_tiles - 1:``."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _pid_of(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group = tile_id // num_pid_in_group
    first = group * GROUP_SIZE_M
    size = min(num_pid_m - first, GROUP_SIZE_M)
    return first + tile_id % size, (tile_id % num_pid_in_group) // size


@tiles.jit
def flat_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tiles_per_sm = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        tiles_per_sm += 1
    tile_id = start_pid - NUM_SMS
    ki = -1
    k_lanes = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    pid_m = 0
    pid_n = 0
    offs_am = tl.arange(0, BLOCK_SIZE_M)
    offs_bn = tl.arange(0, BLOCK_SIZE_N)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for _ in range(0, k_tiles * tiles_per_sm):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            pid_m, pid_n = _pid_of(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
            offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_am = tl.where(offs_am < M, offs_am, 0)
            offs_bn = tl.where(offs_bn < N, offs_bn, 0)
            offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
            offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        offs_k = ki * BLOCK_SIZE_K + k_lanes
        a = tl.load(a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak),
                    mask=k_lanes[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn),
                    mask=k_lanes[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        if ki == k_tiles - 1:
            offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
            c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
            acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)


def matmul_flat(a, b, programs):
    M, K = a.shape
    K, N = b.shape
    c = np.full((M, N), np.nan, dtype=a.dtype)
    flat_persistent[(programs,)](a, b, c, M, N, K, stride(a, 0), stride(a, 1), stride(b, 0), stride(b, 1),
                                 stride(c, 0), stride(c, 1), BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16,
                                 GROUP_SIZE_M=2, NUM_SMS=programs, num_stages=3, num_warps=4)
    return c


def check(rng):
    # odd sizes: partial tiles on every edge, a K that is not a multiple of the block; more tiles
    # than programs (each program's loop crosses several tiles, one not evenly), and one program
    for m, n, k, programs in ((50, 45, 37, 3), (17, 33, 16, 1)):
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        close(matmul_flat(a, b, programs), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)
