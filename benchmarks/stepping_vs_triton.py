"""tiles' stepping mode (backend "step") against Triton's interpreter (TRITON_INTERPRET=1).

    PYTHONPATH=. python benchmarks/stepping_vs_triton.py [--sizes quick|full] [--triton-python PY]

Both run a kernel's Python once per program on NumPy-backed values, which is what makes
``breakpoint()`` in a kernel useful; this measures what that costs on the kernels of
``interp_vs_triton.py`` (same sources, same checks against NumPy, same timing rules: median of
several runs after one checked warm-up; the Triton half in a subprocess, in a Python with torch
and triton, e.g. /work/tvenv/bin/python).  Every program is stepped (no TILES_PROGRAMS), as
Triton's interpreter runs them all.  The vectorized interpreter's time is shown for scale.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("interp_vs_triton", HERE / "interp_vs_triton.py")
ivt = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(ivt)  # type: ignore[union-attr]
time_launch = ivt.time_launch


def time_tiles(size: dict, repeats: int, only: str, backend: str) -> dict[str, list[float]]:
    import re

    import tiles
    cases = ivt.build_cases("tiles", size)  # sets the interpreter; the launches below use ``backend``
    tiles.set_backend(backend)
    out = {}
    for name, (launch, check) in cases.items():
        if only and not re.search(only, name):
            continue
        out[name] = time_launch(launch, check, repeats)
        print(f"  [{backend}] {name}: {out[name][0]:.4f} s wall, {out[name][1]:.4f} s CPU", file=sys.stderr)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", choices=sorted(ivt.SIZES), default="quick")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--triton-repeats", type=int, default=3)
    p.add_argument("--triton-python", help="a Python with torch and triton installed")
    p.add_argument("--only", default="", help="only the kernels whose name matches this regex")
    args = p.parse_args()
    size = ivt.SIZES[args.sizes]
    step = time_tiles(size, args.repeats, args.only, "step")
    vec = time_tiles(size, args.repeats, args.only, "interpreter")
    python = ivt.find_triton_python(args.triton_python)
    triton = ivt.run_triton_half(python, args.sizes, args.triton_repeats, args.only) if python else {}
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"sizes={args.sizes}")
    print("| kernel | step s | triton s | triton/step | step CPU s | triton CPU s | CPU ratio | vectorized s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (wall, cpu, _) in step.items():
        tw, tc, _ = triton.get(name, [float("nan")] * 3)
        print(f"| {name} | {wall:.4f} | {tw:.4f} | {tw / wall:.2f}x | {cpu:.4f} | {tc:.4f} | "
              f"{tc / max(cpu, 1e-9):.2f}x | {vec[name][0]:.4f} |")


if __name__ == "__main__":
    main()
