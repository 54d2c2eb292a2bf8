"""Launch one ``realworld_gemm.py`` kernel twice with tiles, then twice with Triton, at one
configuration, for a profiler to compare (nothing is timed here).  On the GPU machine:

    ncu --clock-control none --set full -k regex:flat_persistent -o /tmp/flat \\
        python benchmarks/gemm_ncu_launch.py --config 128,256,64,8,3 [--fp32-out]
    ncu --import /tmp/flat.ncu-rep --page source --print-source sass --csv > /tmp/flat.csv

Both results are checked against torch before the script exits.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]
from memory_bound import load_kernels  # noqa: E402
from realworld_gemm import KERNELS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="128,256,64,8,3", help="BLOCK_M,BLOCK_N,BLOCK_K,num_warps,num_stages")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--fp32-out", action="store_true", help="an fp32 C (the accumulator stored as it is)")
    args = ap.parse_args()
    import torch

    bm, bn, bk, warps, stages = (int(x) for x in args.config.split(","))
    tmp = Path(tempfile.mkdtemp())
    mods = {side: load_kernels(side, tmp, KERNELS, "gemm_ncu_launch") for side in ("tiles", "triton")}
    m = n = k = args.size
    a = torch.randn((m, k), device="cuda").half()
    b = torch.randn((k, n), device="cuda").half()
    c = torch.empty((m, n), device="cuda", dtype=torch.float32 if args.fp32_out else torch.float16)
    ref = a.float() @ b.float()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    for side, extra in (("tiles", {"backend": "cuda"}), ("triton", {})):
        for _ in range(2):
            mods[side].flat_persistent_matmul[(sms,)](
                a, b, c, m, n, k, *strides, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                num_warps=warps, num_stages=stages, **extra)
        torch.cuda.synchronize()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        print(f"{side}: relative error {err:.2e}")
        if not err < 1e-2:
            sys.exit(f"{side} computed a wrong product")


if __name__ == "__main__":
    main()
