"""Flash attention forward: softmax(Q K^T * scale) V without materializing the score matrix.

Each program owns BLOCK_M query rows of one (batch, head) and streams over the keys
in BLOCK_N blocks, keeping a running row maximum and row sum (online softmax) in
base 2: exp(x) = exp2(x * log2(e)).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale, H, N_CTX,
                             stride_z, stride_h, stride_n,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr):
    block_m = tl.program_id(0)
    batch_head = tl.program_id(1)
    base = (batch_head // H) * stride_z + (batch_head % H) * stride_h
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * stride_n + dims[None, :], mask=rows[:, None] < N_CTX,
                other=0.0)
    log2_e = 1.4426950408889634  # a local: kernels read only constexpr globals (as in Triton)
    scale = sm_scale * log2_e

    row_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        end = tl.minimum((block_m + 1) * BLOCK_M, N_CTX)
    else:
        end = N_CTX
    for start in range(0, end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        kv_offsets = base + keys[None, :] * stride_n + dims[:, None]
        k_t = tl.load(k_ptr + kv_offsets, mask=keys[None, :] < N_CTX, other=0.0)
        scores = tl.dot(q, k_t) * scale
        visible = keys[None, :] < N_CTX
        if CAUSAL:
            visible = visible & (rows[:, None] >= keys[None, :])
        scores = tl.where(visible, scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        p = tl.exp2(scores - new_max[:, None])
        correction = tl.exp2(row_max - new_max)
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * stride_n + dims[None, :], mask=keys[:, None] < N_CTX,
                    other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_n + dims[None, :], out.to(tl.float16),
             mask=rows[:, None] < N_CTX)
    # log-sum-exp of each row in natural-log units (what a backward pass needs)
    tl.store(lse_ptr + batch_head * N_CTX + rows, (row_max + tl.log2(row_sum)) / log2_e,
             mask=rows < N_CTX)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, sm_scale: float,
              block_m: int = 32, block_n: int = 32, backend: str | None = None):
    z, h, n_ctx, head_dim = q.shape
    if not (q.shape == k.shape == v.shape and q.flags.c_contiguous and k.flags.c_contiguous
            and v.flags.c_contiguous):
        raise ValueError("q, k and v must be contiguous arrays of one shape")
    o = np.empty_like(q)
    lse = np.empty((z, h, n_ctx), dtype=np.float32)
    strides = [s // q.itemsize for s in q.strides[:3]]
    grid = (tiles.cdiv(n_ctx, block_m), z * h)
    attention_forward_kernel[grid](q, k, v, o, lse, sm_scale, h, n_ctx, *strides, HEAD_DIM=head_dim,
                                   BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, backend=backend)
    return o, lse


def reference(q, k, v, causal, sm_scale):
    q, k, v = (a.astype(np.float32) for a in (q, k, v))
    scores = (q @ np.swapaxes(k, -1, -2)) * sm_scale
    if causal:
        n = q.shape[2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    return e / total @ v, (top + np.log(total))[..., 0]


def main(z: int = 2, h: int = 2, n_ctx: int = 100, head_dim: int = 32, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((z, h, n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    sm_scale = 1 / math.sqrt(head_dim)
    for causal in (False, True):
        o, lse = attention(q, k, v, causal, sm_scale, backend=backend)
        want_o, want_lse = reference(q, k, v, causal, sm_scale)
        np.testing.assert_allclose(o.astype(np.float32), want_o, rtol=2e-2, atol=2e-2,
                                   err_msg=f"causal={causal}")
        np.testing.assert_allclose(lse, want_lse, rtol=1e-3, atol=1e-3, err_msg=f"lse causal={causal}")
    print(f"attention z={z} h={h} n_ctx={n_ctx} head_dim={head_dim}, causal and not: ok")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--z", type=int, default=2)
    parser.add_argument("--h", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=100)
    parser.add_argument("--head-dim", type=int, default=32)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.z, args.h, args.n_ctx, args.head_dim, backend=chosen(args.backend))
    print(describe(args.backend))
