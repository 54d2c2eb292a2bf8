"""Tutorial-form matmul, with and without wraps + K masks, tiles against Triton at one
configuration: a quick interleaved timing for A/B runs and a profiling mode for ncu.

``realworld_gemm.py`` picks each compiler's best of several configurations with ``do_bench``;
this takes one configuration (default 128x256x64, 8 warps, 3 stages: both compilers' usual
pick), runs ``--reps`` rounds in which every variant launches 30 times back to back between CUDA
events, and prints per variant the median, least and greatest TFLOP/s.  The H200's clocks swing
between rounds, so compare variants of the same run.  Each variant's result is checked against
torch first.  ``--profile`` launches each variant once between ``torch.cuda.profiler.start/stop``
and exits, for ``ncu --profile-from-start off``:

    python benchmarks/tutorial_forms_timing.py [--size 4096] [--stages 3] [--reps 7]
    ncu --clock-control none --profile-from-start off --set full -o forms \\
        python benchmarks/tutorial_forms_timing.py --profile
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]
from memory_bound import load_kernels  # noqa: E402
from realworld_gemm import KERNELS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import torch

    tmp = Path(tempfile.mkdtemp())
    modules = {col: load_kernels(col, tmp, KERNELS, "forms") for col in ("tiles", "triton")}
    extra = {"tiles": {"backend": "cuda"}, "triton": {}}
    m = n = k = args.size
    torch.manual_seed(0)
    a = torch.randn((m, k), device="cuda").half()
    b = torch.randn((k, n), device="cuda").half()
    c = torch.empty((m, n), device="cuda", dtype=torch.float16)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    ref = (a.float() @ b.float())
    grid = (math.ceil(m / 128) * math.ceil(n / 256),)

    def launch(column: str, masked: bool) -> None:
        modules[column].tutorial_matmul[grid](
            a, b, c, m, n, k, *strides, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
            WRAP_AND_MASK=masked, num_warps=8, num_stages=args.stages, **extra[column])

    variants = [(column, masked) for column in modules for masked in (True, False)]
    for v in variants:
        c.fill_(float("nan"))
        for _ in range(3):
            launch(*v)
        torch.cuda.synchronize()
        err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
        if not err < 1e-2:
            sys.exit(f"{v}: relative error {err}")
    if args.profile:
        for v in variants:
            torch.cuda.profiler.start()
            launch(*v)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        return
    rates: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
    for _ in range(args.reps):
        for v in variants:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(30):
                launch(*v)
            end.record()
            torch.cuda.synchronize()
            rates[v].append(2 * m * n * k / (start.elapsed_time(end) / 30) / 1e9)
    print(f"{torch.cuda.get_device_name()}  {m}^3 fp16, 128x256x64 w8 s{args.stages}, TFLOP/s over {args.reps} rounds")
    for (column, masked), r in rates.items():
        r.sort()
        form = "wraps + K masks" if masked else "no masks"
        print(f"{column:7s} {form:16s} median {r[len(r) // 2]:7.1f}  least {r[0]:7.1f}  greatest {r[-1]:7.1f}")


if __name__ == "__main__":
    main()
