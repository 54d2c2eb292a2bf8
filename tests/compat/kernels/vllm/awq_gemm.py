"""vLLM style AWQ (4-bit, group-wise zero point and scale) in Triton: a dequantize kernel and a
split-K GEMM that dequantizes its B tile on the fly.  Each int32 holds eight nibbles in AWQ's
``[0, 2, 4, 6, 1, 3, 5, 7]`` order (the top nibble makes many words negative, so ``>>`` is an
arithmetic shift undone by ``& 0xF``); the kernels widen a packed tile eightfold with three
``tl.interleave(x, x)``, build the per-column shift from a ``(2, 4)`` ``arange`` grid
``.reshape(8)``, ``tl.broadcast_to`` + ``tl.reshape`` it to the tile, load one zero/scale row per
group with ``tl.arange(0, 1)``, mix int32 and fp16 in ``(w - z) * s``, and (GEMM) accumulate in
the output's element type (``tl.zeros(..., dtype=c_ptr.type.element_ty)`` and
``tl.dot(..., out_dtype=fp16)``).  Split K over a second grid axis writes ``[SPLIT_K, M, N]``
partials summed on the host; masked loads without ``other`` cover K past its end."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


@tiles.jit
def _awq_dequantize(qweight_ptr, scales_ptr, zeros_ptr, group_size, result_ptr, num_cols, num_rows,
                    BLOCK_SIZE_X: tl.constexpr, BLOCK_SIZE_Y: tl.constexpr):
    pid_x = tl.program_id(axis=0)
    pid_y = tl.program_id(axis=1)
    ys = pid_y * BLOCK_SIZE_Y + tl.arange(0, BLOCK_SIZE_Y)
    xs = pid_x * BLOCK_SIZE_X + tl.arange(0, BLOCK_SIZE_X)
    w = tl.load(qweight_ptr + ys[:, None] * num_cols + xs[None, :], (ys < num_rows)[:, None] & (xs < num_cols)[None, :])
    w = tl.interleave(w, w)
    w = tl.interleave(w, w)
    w = tl.interleave(w, w)
    order = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = tl.broadcast_to((order * 4)[None, :], (BLOCK_SIZE_Y * BLOCK_SIZE_X, 8))
    shifts = tl.reshape(shifts, (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8))
    w = (w >> shifts) & 0xF

    g = pid_y * BLOCK_SIZE_Y // group_size + tl.arange(0, 1)
    g_ok = g < num_rows // group_size
    z = tl.load(zeros_ptr + g[:, None] * num_cols + xs[None, :], g_ok[:, None] & (xs < num_cols)[None, :])
    z = tl.interleave(z, z)
    z = tl.interleave(z, z)
    z = tl.interleave(z, z)
    z = (tl.broadcast_to(z, (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8)) >> shifts) & 0xF
    out_xs = pid_x * BLOCK_SIZE_X * 8 + tl.arange(0, BLOCK_SIZE_X * 8)
    out_x_ok = out_xs < num_cols * 8
    s = tl.load(scales_ptr + g[:, None] * num_cols * 8 + out_xs[None, :], g_ok[:, None] & out_x_ok[None, :])
    s = tl.broadcast_to(s, (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8))
    deq = ((w - z) * s).to(result_ptr.type.element_ty)
    tl.store(result_ptr + ys[:, None] * num_cols * 8 + out_xs[None, :], deq,
             (ys < num_rows)[:, None] & out_x_ok[None, :])


@tiles.jit
def _awq_gemm(a_ptr, b_ptr, c_ptr, zeros_ptr, scales_ptr, M, N, K, group_size, BLOCK_SIZE_M: tl.constexpr,
              BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    pid_z = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    acc_dtype = c_ptr.type.element_ty
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
    order = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = tl.broadcast_to((order * 4)[None, :], (BLOCK_SIZE_K * (BLOCK_SIZE_N // 8), 8))
    shifts = tl.reshape(shifts, (BLOCK_SIZE_K, BLOCK_SIZE_N))

    rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    packed_cols = pid_n * (BLOCK_SIZE_N // 8) + tl.arange(0, BLOCK_SIZE_N // 8)
    packed_ok = packed_cols < N // 8
    cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    ks = pid_z * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + rows[:, None] * K + ks[None, :]
    b_ptrs = b_ptr + ks[:, None] * (N // 8) + packed_cols[None, :]
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K * SPLIT_K)):
        k_ok = ks < K
        a = tl.load(a_ptrs, mask=(rows < M)[:, None] & k_ok[None, :])
        b = tl.load(b_ptrs, mask=k_ok[:, None] & packed_ok[None, :])
        b = tl.interleave(b, b)
        b = tl.interleave(b, b)
        b = tl.interleave(b, b)
        g = (BLOCK_SIZE_K * SPLIT_K * k + pid_z * BLOCK_SIZE_K) // group_size + tl.arange(0, 1)
        g_ok = g < K // group_size
        z = tl.load(zeros_ptr + g[:, None] * (N // 8) + packed_cols[None, :], mask=g_ok[:, None] & packed_ok[None, :])
        z = tl.interleave(z, z)
        z = tl.interleave(z, z)
        z = tl.interleave(z, z)
        z = tl.broadcast_to(z, (BLOCK_SIZE_K, BLOCK_SIZE_N))
        s = tl.load(scales_ptr + g[:, None] * N + cols[None, :], mask=g_ok[:, None] & (cols < N)[None, :])
        s = tl.broadcast_to(s, (BLOCK_SIZE_K, BLOCK_SIZE_N))
        b = (b >> shifts) & 0xF
        z = (z >> shifts) & 0xF
        b = ((b - z) * s).to(c_ptr.type.element_ty)
        acc = tl.dot(a, b, acc, out_dtype=acc_dtype)
        ks += BLOCK_SIZE_K * SPLIT_K
        a_ptrs += BLOCK_SIZE_K * SPLIT_K
        b_ptrs += BLOCK_SIZE_K * SPLIT_K * (N // 8)
    c = acc.to(c_ptr.type.element_ty)
    c_ptrs = c_ptr + pid_z * N * M + rows[:, None] * N + cols[None, :]
    tl.store(c_ptrs, c, mask=(rows[:, None] < M) & (cols[None, :] < N))


def pack(nibbles):
    """[R, 8 * C] values in 0..15 -> [R, C] int32, AWQ order."""
    r, c8 = nibbles.shape
    words = np.zeros((r, c8 // 8), np.uint32)
    for slot, col in enumerate(AWQ_ORDER):
        words |= nibbles[:, col::8].astype(np.uint32) << np.uint32(4 * slot)
    return words.view(np.int32)


def awq_dequantize(qweight, scales, zeros, bx=4, by=32):
    rows, cols = qweight.shape
    out = np.empty((rows, cols * 8), scales.dtype)
    grid = (tiles.cdiv(cols, bx), tiles.cdiv(rows, by))
    _awq_dequantize[grid](qweight, scales, zeros, rows // scales.shape[0], out, cols, rows,
                          BLOCK_SIZE_X=bx, BLOCK_SIZE_Y=by)
    return out


def awq_gemm(a, qweight, scales, qzeros, split_k, bm=16, bn=32, bk=32):
    M, K = a.shape
    N = qweight.shape[1] * 8
    partial = np.zeros((split_k, M, N), scales.dtype)
    grid = (tiles.cdiv(M, bm) * tiles.cdiv(N, bn), split_k)
    _awq_gemm[grid](a, qweight, partial, qzeros, scales, M, N, K, K // qzeros.shape[0], BLOCK_SIZE_M=bm,
                    BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, SPLIT_K=split_k)
    return partial.astype(np.float32).sum(0)


def check(rng):
    M, K, N, group = 37, 160, 72, 32
    w = rng.integers(0, 16, (K, N))
    w[:, 7::8] = 15  # every word's top nibble set: negative int32
    z = rng.integers(0, 16, (K // group, N))
    z[0, :8] = [15, 0, 15, 0, 8, 7, 1, 14]
    qweight, qzeros = pack(w), pack(z)
    assert (qweight < 0).any()
    scales = rng.uniform(0.005, 0.05, (K // group, N)).astype(np.float16)
    deq = (w - np.repeat(z, group, 0)) * np.repeat(scales.astype(np.float32), group, 0)
    close(awq_dequantize(qweight, scales, qzeros), deq.astype(np.float16), rtol=1e-3, atol=1e-4)
    a = rng.standard_normal((M, K)).astype(np.float16)
    ref = a.astype(np.float64) @ deq.astype(np.float16).astype(np.float64)
    # the accumulator is fp16 (the output's dtype), and a backend may round it after every product:
    # 160 roundings of partial sums up to ~10 (half an ulp is 2.4e-3 there) drift by ~sqrt(160) ulps
    for split_k in (1, 2):
        close(awq_gemm(a, qweight, scales, qzeros, split_k), ref, rtol=1e-2, atol=5e-2)
