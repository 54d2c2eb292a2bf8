"""One launch each of tiles' and Triton's tutorial-form attention kernel and of torch SDPA, inside a
profiler range, for Nsight Compute to compare (kernel names, launch shapes, pipe use, stalls):

    ncu --profile-from-start off --clock-control none --section SpeedOfLight --section LaunchStats \\
        --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis \\
        python benchmarks/attention_profile.py [--head-dim 128] [--causal] \\
        [--tiles 128,128,8,2] [--triton 128,64,8,3]

Each kernel is compiled and run (and checked against SDPA) before the range opens.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels  # noqa: E402
from realworld_attention import KERNELS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="4,32,4096", help="Z,H,N_CTX")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--tiles", default="128,128,8,2", help="BLOCK_M,BLOCK_N,warps,stages")
    ap.add_argument("--triton", default="128,64,8,3", help="BLOCK_M,BLOCK_N,warps,stages")
    args = ap.parse_args()

    import torch

    z, h, n_ctx = (int(x) for x in args.shape.split(","))
    d, causal = args.head_dim, args.causal
    q, k, v = (torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    m = torch.empty((z, h, n_ctx), device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(d)
    tmp = Path(tempfile.mkdtemp())

    def sdpa() -> None:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal)

    def launcher(flavour: str, cfg: str):
        mod = load_kernels(flavour, tmp, KERNELS, "attention_profile")
        bm, bn, warps, stages = (int(x) for x in cfg.split(","))
        kw = {"backend": "cuda"} if flavour == "tiles" else {}

        def launch() -> None:
            mod.attn_fwd[(math.ceil(n_ctx / bm), z * h)](
                q, k, v, scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), z, h, n_ctx,
                HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1, num_warps=warps,
                num_stages=stages, **kw)
        return launch

    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal)
    runs = {"tiles": launcher("tiles", args.tiles), "triton": launcher("triton", args.triton), "sdpa": sdpa}
    for name, run in runs.items():
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        if name != "sdpa":
            err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
            print(f"{name}: relative error {err:.2e}")
            assert err < 1e-2, name
    torch.cuda.cudart().cudaProfilerStart()
    for run in runs.values():
        run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
