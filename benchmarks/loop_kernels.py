"""Loop-heavy kernels for benchmarks/interp_vs_triton.py, written once for both compilers.

``BENCH_FLAVOR=triton`` makes ``jit``/``tl`` Triton's; otherwise they are tiles'.  The forms
are those of real code: a persistent matmul looping over output tiles, the autotuned
tutorial matmul (pointer tiles advanced by ``BLOCK_K * stride``, K masks, grouped
ordering), a chunked cumulative sum, a chunked linear attention and a grouped GEMM whose
operands are device addresses loaded from an int64 table.
"""

import os
import time

if os.environ.get("BENCH_FLAVOR") == "triton":
    import triton as jitlib
    import triton.language as tl
else:
    import tiles as jitlib
    import tiles.language as tl

jit = jitlib.jit
cdiv = jitlib.cdiv


@jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    in_group = GROUP_M * num_n
    for tile in range(tl.program_id(0), num_m * num_n, NUM_SMS):
        group = tile // in_group
        first_m = group * GROUP_M
        group_rows = min(num_m - first_m, GROUP_M)
        pid_m = first_m + (tile % in_group) % group_rows
        pid_n = (tile % in_group) // group_rows
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            rk = kt * BLOCK_K + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def time_once(kernel_call, quantiles=None):
    """The autotuners' benchmark here: one timed call per config, on both sides.  (Triton's
    default needs a GPU driver and fails under TRITON_INTERPRET=1 on a CPU-only machine.)"""
    start = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


@jitlib.autotune(configs=[
    jitlib.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4}),
    jitlib.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}),
], key=["M", "N", "K"], do_bench=time_once)
@jit
def tuned_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@jit
def chunked_cumsum(x_ptr, y_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros((1,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * row_stride + cols, s, mask=cols < n_cols)
        carry += tl.sum(x, axis=0)


@jit
def chunked_linear_attention(q_ptr, k_ptr, v_ptr, o_ptr, T, D: tl.constexpr, CHUNK: tl.constexpr):
    """o_t = sum over s <= t of (q_t . k_s) v_s, one (batch, head) per program, chunk by chunk."""
    bh = tl.program_id(0)
    base = bh * T * D
    t_in = tl.arange(0, CHUNK)
    d = tl.arange(0, D)
    causal = t_in[:, None] >= t_in[None, :]
    state = tl.zeros((D, D), dtype=tl.float32)
    for start in range(0, T, CHUNK):
        rows = start + t_in
        ok = rows[:, None] < T
        offs = base + rows[:, None] * D + d[None, :]
        q = tl.load(q_ptr + offs, mask=ok, other=0.0)
        k = tl.load(k_ptr + offs, mask=ok, other=0.0)
        v = tl.load(v_ptr + offs, mask=ok, other=0.0)
        scores = tl.where(causal, tl.dot(q, tl.trans(k)), 0.0)
        o = tl.dot(q, state) + tl.dot(scores, v)
        tl.store(o_ptr + offs, o, mask=ok)
        state += tl.dot(tl.trans(k), v)


@jit
def grouped_matmul(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_sizes, group_lds, group_count,
                   NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    done = 0
    for g in range(group_count):
        gm = tl.load(group_sizes + g * 3)
        gn = tl.load(group_sizes + g * 3 + 1)
        gk = tl.load(group_sizes + g * 3 + 2)
        num_n = tl.cdiv(gn, BLOCK_N)
        tiles = tl.cdiv(gm, BLOCK_M) * num_n
        while tile >= done and tile < done + tiles:
            lda = tl.load(group_lds + g * 3)
            ldb = tl.load(group_lds + g * 3 + 1)
            ldc = tl.load(group_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            local = tile - done
            rm = (local // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (local % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            a_ptrs = a_ptr + rm[:, None] * lda + rk[None, :]
            b_ptrs = b_ptr + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kt in range(0, tl.cdiv(gk, BLOCK_K)):
                k_left = gk - kt * BLOCK_K
                a = tl.load(a_ptrs, mask=(rm[:, None] < gm) & (rk[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < gn), other=0.0)
                acc += tl.dot(a, b)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * ldb
            tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16),
                     mask=(rm[:, None] < gm) & (rn[None, :] < gn))
            tile += NUM_SMS
        done = done + tiles
