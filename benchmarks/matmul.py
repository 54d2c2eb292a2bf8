"""fp16 matmul and fused attention forward: tiles (cuda) vs Triton vs torch, one process.

The kernel source (KERNELS) is imported twice, once with tiles' imports and once
with Triton's, so both compilers see the same program.  Every configuration in
CONFIGS is offered to both; the best median (``triton.testing.do_bench``) per size
is reported, as TFLOP/s = 2*M*N*K / time (attention: 4*Z*H*N^2*D / time, half of that
when causal).

    python benchmarks/matmul.py [--sizes 1024,4096,8192] [--no-attention]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels as load_shared  # noqa: E402

KERNELS = '''
@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_base = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_base = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k = tl.multiple_of(k, BLOCK_K)
        a = tl.load(a_base + k)
        b = tl.load(b_base + k * stride_bk)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


@jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, N_CTX, stride_z, stride_h, stride_n,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr):
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
    hi = N_CTX
    if CAUSAL:
        hi = (block_m + 1) * BLOCK_M
    for start in range(0, hi, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + keys[:, None] * stride_n + dims[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        if CAUSAL:
            s = tl.where(rows[:, None] >= keys[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * stride_n + dims[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_n + dims[None, :], out.to(tl.float16))
'''

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 128, 32, 4, 3), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 32, 4, 4),
           (128, 128, 32, 8, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 4)]
# attention: (BLOCK_M, BLOCK_N, num_warps, num_stages)
ATTN_CONFIGS = [(64, 64, 4, 3), (128, 64, 8, 3), (128, 32, 4, 3), (128, 32, 8, 3), (64, 32, 4, 3),
                (128, 128, 8, 2), (64, 128, 4, 2), (128, 64, 8, 2)]


def load_kernels(flavour: str, tmpdir: Path):
    return load_shared(flavour, tmpdir, KERNELS, "bench_matmul")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1024,4096,8192")
    ap.add_argument("--no-attention", action="store_true")
    ap.add_argument("--attn", default="4,32,4096,128", help="Z,H,N_CTX,HEAD_DIM")
    args = ap.parse_args()

    import torch
    from triton.testing import do_bench

    tmp = Path(tempfile.mkdtemp())
    mods = {"tiles": load_kernels("tiles", tmp), "triton": load_kernels("triton", tmp)}
    extra = {"tiles": {"backend": "cuda"}, "triton": {}}
    rows = []

    def timed(fn, check) -> float | None:
        try:
            fn()
            torch.cuda.synchronize()
            if not check():
                print("    wrong result")
                return None
            return do_bench(fn, warmup=25, rep=100, return_mode="median")
        except Exception as e:  # a config that fails to compile or run: skip it, report why
            print(f"    failed: {type(e).__name__}: {str(e)[:200]}")
            return None

    def best_configs(label: str, configs, launch, out, ref, flops: float) -> dict[str, tuple[float, str]]:
        """Every config on both compilers; the best TFLOP/s per compiler (checked against ref)."""
        best: dict[str, tuple[float, str]] = {}
        for col, mod in mods.items():
            for cfg in configs:
                def run(mod=mod, cfg=cfg, col=col):
                    launch(mod, cfg, extra[col])

                def ok() -> bool:
                    return ((out.float() - ref.float()).norm() / ref.float().norm()).item() < 1e-2
                out.zero_()
                ms = timed(run, ok)
                name = "x".join(str(x) for x in cfg[:-2]) + f" w{cfg[-2]} s{cfg[-1]}"
                if ms is not None:
                    tf = flops / (ms * 1e-3) / 1e12
                    print(f"  {label} {col:6s} {name:22s} {tf:7.1f} TFLOP/s", flush=True)
                    if tf > best.get(col, (0.0, ""))[0]:
                        best[col] = (tf, name)
        return best

    for size in (int(s) for s in args.sizes.split(",")):
        m = n = k = size
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        c = torch.empty((m, n), device="cuda", dtype=torch.float16)

        def mm(mod, cfg, kw, a=a, b=b, c=c, m=m, n=n, k=k):
            bm, bn, bk, warps, stages = cfg
            mod.matmul_kernel[(math.ceil(m / bm) * math.ceil(n / bn),)](
                a, b, c, m, n, k, k, n, n, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps,
                num_stages=stages, **kw)
        flops = 2.0 * m * n * k
        best = best_configs(f"{size}^3", CONFIGS, mm, c, a @ b, flops)
        ms = do_bench(lambda: a @ b, warmup=25, rep=100, return_mode="median")
        best["torch"] = (flops / (ms * 1e-3) / 1e12, "cuBLAS")
        rows.append((f"matmul fp16 {size}^3", best))

    if not args.no_attention:
        z, h, n_ctx, d = (int(x) for x in args.attn.split(","))
        q, kk, v = (torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        scale = 1 / math.sqrt(d)
        for causal in (False, True):
            def sdpa(causal=causal):
                return torch.nn.functional.scaled_dot_product_attention(q, kk, v, scale=scale, is_causal=causal)

            def attn(mod, cfg, kw, causal=causal):
                bm, bn, warps, stages = cfg
                mod.attention_kernel[(math.ceil(n_ctx / bm), z * h)](
                    q, kk, v, o, scale, h, n_ctx, h * n_ctx * d, n_ctx * d, d, HEAD_DIM=d, BLOCK_M=bm,
                    BLOCK_N=bn, CAUSAL=causal, num_warps=warps, num_stages=stages, **kw)
            flops = 4.0 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0)
            label = "attention" + (" causal" if causal else "")
            best = best_configs(label, ATTN_CONFIGS, attn, o, sdpa(), flops)
            ms = do_bench(sdpa, warmup=25, rep=100, return_mode="median")
            best["torch"] = (flops / (ms * 1e-3) / 1e12, "SDPA")
            rows.append((f"{label} fwd {z}x{h}x{n_ctx}x{d}", best))

    print(f"\n{torch.cuda.get_device_name()}  (TFLOP/s, best config)")
    print(f"{'case':36s} {'tiles':>22s} {'triton':>22s} {'torch':>14s} {'tiles/triton':>12s} {'tiles/torch':>11s}")
    for name, best in rows:
        def cell(col: str, width: int) -> str:
            if col not in best:
                return f"{'-':>{width}s}"
            tf, cfg = best[col]
            return f"{f'{tf:.1f} ({cfg})':>{width}s}"
        t = best.get("tiles", (0.0, ""))[0]
        r = best.get("triton", (float("nan"), ""))[0]
        print(f"{name:36s} {cell('tiles', 22)} {cell('triton', 22)} {cell('torch', 14)} "
              f"{t / r:12.2f} {t / best['torch'][0]:11.2f}")


if __name__ == "__main__":
    main()
