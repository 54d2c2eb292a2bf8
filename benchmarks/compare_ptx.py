"""The PTX tiles and Triton generate for the benchmark forms, side by side, for reading the gap.

Compiles (and launches once) the realworld GEMM forms and the tutorial-form attention with both
compilers at the configuration each wins with, writes ``<case>.<compiler>.ptx`` into ``--out``
and prints a count of the instructions that matter for tensor-core kernels.  Run on a GPU machine:

    python benchmarks/compare_ptx.py [--out ptx_dump]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import realworld_attention  # noqa: E402
import realworld_gemm  # noqa: E402
from memory_bound import load_kernels  # noqa: E402

COUNTED = ["wgmma.mma_async", "wgmma.wait_group", "wgmma.commit_group", "wgmma.fence", "cp.async.cg",
           "cp.async.ca", "cp.async.wait_group", "cp.async.commit_group", "bar.sync", "ld.global",
           "st.global", "ld.shared", "st.shared", "ldmatrix", "stmatrix", "mbarrier", "cp.async.bulk",
           "ex2.approx", "selp", "setp", "mad.lo", "cvt.rn"]


def counts(ptx: str) -> dict[str, int]:
    lines = [ln.strip() for ln in ptx.splitlines()]
    return {op: sum(1 for ln in lines if re.match(rf"(@%p\d+ )?{re.escape(op)}", ln)) for op in COUNTED}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="ptx_dump")
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    gemm = {c: load_kernels(c, tmp, realworld_gemm.KERNELS, "cmp_gemm") for c in ("tiles", "triton")}
    attn = {c: load_kernels(c, tmp, realworld_attention.KERNELS, "cmp_attn") for c in ("tiles", "triton")}
    extra = {"tiles": {"backend": "cuda"}, "triton": {}}
    n = args.size
    a = torch.randn((n, n), device="cuda", dtype=torch.float16)
    b = torch.randn((n, n), device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    a8, b8 = a.to(torch.float8_e4m3fn), b.T.contiguous().T.to(torch.float8_e4m3fn)
    bt = b.T.contiguous().T
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def tutorial(x, y, wrap, cfg):
        bm, bn, bk, w, s = cfg
        strides = (x.stride(0), x.stride(1), y.stride(0), y.stride(1), c.stride(0), c.stride(1))
        return lambda mod, kw: mod.tutorial_matmul[(math.ceil(n / bm) * math.ceil(n / bn),)](
            x, y, c, n, n, n, *strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, WRAP_AND_MASK=wrap,
            num_warps=w, num_stages=s, **kw)

    def persistent(cfg):
        bm, bn, bk, w, s = cfg
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        return lambda mod, kw: mod.persistent_matmul[(sms,)](
            a, b, c, n, n, n, *strides, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
            num_warps=w, num_stages=s, **kw)

    def attention(d, causal, cfg):
        bm, bn, w, s = cfg
        q, k, v = (torch.randn((4, 32, n, d), device="cuda", dtype=torch.float16) for _ in range(3))
        o, m = torch.empty_like(q), torch.empty((4, 32, n), device="cuda", dtype=torch.float32)
        return lambda mod, kw: mod.attn_fwd[(math.ceil(n / bm), 4 * 32)](
            q, k, v, 0.1, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), 4, 32, n, HEAD_DIM=d,
            BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1, num_warps=w, num_stages=s, **kw)

    big, small = (128, 256, 64, 8, 3), (128, 128, 64, 8, 3)
    cases = {
        "gemm_tutorial_wrap_mask": (gemm, tutorial(a, b, True, big)),
        "gemm_tutorial_plain": (gemm, tutorial(a, b, False, big)),
        "gemm_persistent": (gemm, persistent(big)),
        "gemm_b_transposed": (gemm, tutorial(a, bt, False, small)),
        "gemm_fp8_b_transposed": (gemm, tutorial(a8, b8, False, small)),
        "attn_d64": (attn, attention(64, False, (128, 64, 4, 3))),
        "attn_d128": (attn, attention(128, False, (128, 64, 8, 3))),
        "attn_d128_causal": (attn, attention(128, True, (128, 64, 8, 3))),
    }
    for name, (mods, launch) in cases.items():
        found = {}
        for col, mod in mods.items():
            try:
                compiled = launch(mod, extra[col])
                ptx = compiled.asm["ptx"]
            except Exception as e:  # report and go on: one failing form must not hide the rest
                print(f"{name} {col}: failed: {type(e).__name__}: {str(e)[:200]}")
                continue
            (out / f"{name}.{col}.ptx").write_text(ptx)
            found[col] = counts(ptx)
        torch.cuda.synchronize()
        print(f"\n{name}")
        for op in COUNTED:
            row = [found.get(col, {}).get(op, "-") for col in ("tiles", "triton")]
            if any(v not in (0, "-") for v in row):
                print(f"  {op:24s} tiles {row[0]!s:>6} triton {row[1]!s:>6}")


if __name__ == "__main__":
    main()
