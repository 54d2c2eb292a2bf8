"""Fused attention forward in the forms of Triton's tutorial: tiles (cuda) vs Triton vs torch SDPA,
one process, same kernel text, the same configurations offered to both.  Two forms: block pointers
advanced in the loop, and the tutorial's Hopper form with tensor descriptors made on the device
(``tl.make_tensor_descriptor``, ``desc_k.load([...]).T``); both with an off-band loop and an on-band
loop for causal masks and ``Out.type.element_ty``.

    python benchmarks/realworld_attention.py [--shape 4,32,4096] [--head-dims 64,128] [--rounds 5]
        [--configs 128x64_w8_s3,128x128_w8_s2] [--forms block_ptr,descriptor]

Each configuration is timed once for both compilers; then each side's best and SDPA are timed
in turn ``--rounds`` times and the table shows the medians (SDPA's own figure moves by up to 10 %
between runs, so a single timing of it is not a ratio to rely on).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels as load_shared  # noqa: E402

KERNELS = '''
@jit
def _inner(acc, l_i, m_i, q, k_blocks, v_blocks, start_m, qk_scale, BLOCK_M: tl.constexpr,
           HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr, offs_m: tl.constexpr,
           offs_n: tl.constexpr, N_CTX: tl.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    k_blocks = tl.advance(k_blocks, (0, lo))
    v_blocks = tl.advance(v_blocks, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_blocks)
        qk = tl.dot(q, k)
        if STAGE == 2:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_blocks)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        v_blocks = tl.advance(v_blocks, (BLOCK_N, 0))
        k_blocks = tl.advance(k_blocks, (0, BLOCK_N))
    return acc, l_i, m_i


@jit
def attn_fwd(Q, K, V, sm_scale, M, Out, stride_qz, stride_qh, stride_qm, stride_qk,
             stride_kz, stride_kh, stride_kn, stride_kk, stride_vz, stride_vh, stride_vk, stride_vn,
             stride_oz, stride_oh, stride_om, stride_on, Z, H, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qkv_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    q_blocks = tl.make_block_ptr(base=Q + qkv_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, stride_qk),
                                 offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    v_blocks = tl.make_block_ptr(base=V + qkv_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_vk, stride_vn),
                                 offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    k_blocks = tl.make_block_ptr(base=K + qkv_offset, shape=(HEAD_DIM, N_CTX), strides=(stride_kk, stride_kn),
                                 offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    o_blocks = tl.make_block_ptr(base=Out + qkv_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_om, stride_on),
                                 offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = tl.load(q_blocks)
    if STAGE & 1:
        acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_blocks, v_blocks, start_m, qk_scale, BLOCK_M, HEAD_DIM,
                               BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_blocks, v_blocks, start_m, qk_scale, BLOCK_M, HEAD_DIM,
                               BLOCK_N, 2, offs_m, offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    tl.store(o_blocks, acc.to(Out.type.element_ty))
'''

KERNELS_DESC = '''
@jit
def _inner_desc(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M: tl.constexpr,
                HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr, offs_m: tl.constexpr,
                offs_n: tl.constexpr, N_CTX: tl.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offset_kv = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offset_kv, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_kv, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
        offset_kv += BLOCK_N
    return acc, l_i, m_i


@jit
def attn_fwd(Q, K, V, sm_scale, M, Out, Z, H, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    rows = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _inner_desc(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M,
                                    HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _inner_desc(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M,
                                    HEAD_DIM, BLOCK_N, 2, offs_m, offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(Out.type.element_ty))
'''

# (BLOCK_M, BLOCK_N, num_warps, num_stages)
CONFIGS = [(128, 64, 8, 3), (128, 64, 4, 3), (128, 32, 4, 3), (64, 64, 4, 3), (128, 128, 8, 2)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="4,32,4096", help="Z,H,N_CTX")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--forms", default="block_ptr,descriptor",
                    help="block_ptr (block pointers advanced in the loop) and/or descriptor (the tutorial's "
                         "Hopper form: tl.make_tensor_descriptor, desc.load([...]).T)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="after the sweep, time each side's best configuration and SDPA in turn this many times "
                         "(the table shows medians)")
    ap.add_argument("--configs", help="BLOCK_MxBLOCK_N_wWARPS_sSTAGES,... offered to both (default: the script's five)")
    args = ap.parse_args()
    configs = CONFIGS if not args.configs else [
        tuple(int(x) for x in c.replace("x", "_").replace("w", "").replace("s", "").split("_"))
        for c in args.configs.split(",")]

    import torch
    import triton
    from triton.testing import do_bench

    import tiles

    def scratch(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device="cuda")
    triton.set_allocator(scratch)  # Triton's device-side descriptors need scratch; tiles' do not
    tiles.set_allocator(scratch)
    tmp = Path(tempfile.mkdtemp())
    extra = {"tiles": {"backend": "cuda"}, "triton": {}}
    z, h, n_ctx = (int(x) for x in args.shape.split(","))
    rows = []
    for form, d in itertools.product(args.forms.split(","), (int(x) for x in args.head_dims.split(","))):
        source = {"block_ptr": KERNELS, "descriptor": KERNELS_DESC}[form]
        mods = {col: load_shared(col, tmp, source, f"realworld_attention_{form}") for col in ("tiles", "triton")}
        q, k, v = (torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        m = torch.empty((z, h, n_ctx), device="cuda", dtype=torch.float32)
        scale = 1 / math.sqrt(d)
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal)
            flops = 4.0 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0)

            def launch(mod, cfg, kw, causal=causal, q=q, k=k, v=v, o=o, m=m, d=d, scale=scale):
                bm, bn, warps, stages = cfg
                grid = (math.ceil(n_ctx / bm), z * h)
                meta = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1, num_warps=warps,
                            num_stages=stages, **kw)
                if form == "descriptor":
                    mod.attn_fwd[grid](q, k, v, scale, m, o, z, h, n_ctx, **meta)
                else:
                    mod.attn_fwd[grid](q, k, v, scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                                       z, h, n_ctx, **meta)
            best: dict[str, tuple[float, str]] = {}
            chosen: dict[str, tuple[int, ...]] = {}
            for col, mod in mods.items():
                for cfg in configs:
                    if cfg[1] > d:
                        continue
                    name = f"{cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}"
                    try:
                        o.zero_()
                        launch(mod, cfg, extra[col])
                        torch.cuda.synchronize()
                        err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                        if not err < 1e-2:
                            print(f"  {form} d={d} causal={causal} {col} {name}: wrong result (rel {err:.2e})")
                            continue
                        ms = do_bench(lambda: launch(mod, cfg, extra[col]), warmup=25, rep=100,
                                      return_mode="median")
                    except Exception as e:  # a config that fails to compile: report it, go on
                        why = f"{type(e).__name__}: {str(e)[:160]}"
                        print(f"  {form} d={d} causal={causal} {col} {name}: failed: {why}")
                        continue
                    tf = flops / (ms * 1e-3) / 1e12
                    print(f"  {form} d={d} causal={causal} {col:6s} {name:16s} {tf:7.1f} TFLOP/s", flush=True)
                    if tf > best.get(col, (0.0, ""))[0]:
                        best[col] = (tf, name)
                        chosen[col] = cfg
            contenders = {col: (lambda col=col: launch(mods[col], chosen[col], extra[col])) for col in chosen}
            contenders["torch"] = lambda causal=causal, q=q, k=k, v=v, scale=scale: \
                torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal)
            names = {**{col: best[col][1] for col in chosen}, "torch": "SDPA"}
            samples: dict[str, list[float]] = {col: [] for col in contenders}
            cols = list(contenders)
            for r in range(max(1, args.rounds)):  # in turn, starting one further each round
                for col in cols[r % len(cols):] + cols[:r % len(cols)]:
                    ms = do_bench(contenders[col], warmup=25, rep=100, return_mode="median")
                    samples[col].append(flops / (ms * 1e-3) / 1e12)
            print(f"  {form} d={d} causal={causal} rounds: " + "; ".join(
                f"{col} {' '.join(f'{x:.1f}' for x in xs)}" for col, xs in samples.items()), flush=True)
            best = {col: (statistics.median(xs), names[col]) for col, xs in samples.items()}
            rows.append((f"{form} d={d}{' causal' if causal else ''} {z}x{h}x{n_ctx}", best))

    print(f"\n{torch.cuda.get_device_name()}  (TFLOP/s: each side's best configuration in the sweep, "
          f"median of {max(1, args.rounds)} rounds timed in turn with SDPA)")
    print(f"{'case':36s} {'tiles':>22s} {'triton':>22s} {'torch':>8s} {'tiles/triton':>12s} {'tiles/torch':>11s}")
    for name, best in rows:
        t = best.get("tiles", (0.0, "-"))
        r = best.get("triton", (float("nan"), "-"))
        s = best["torch"][0]
        print(f"{name:36s} {f'{t[0]:.1f} ({t[1]})':>22s} {f'{r[0]:.1f} ({r[1]})':>22s} {s:8.1f} "
              f"{t[0] / r[0]:12.2f} {t[0] / s:11.2f}")


if __name__ == "__main__":
    main()
