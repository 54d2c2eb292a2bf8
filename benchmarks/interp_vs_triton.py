"""tiles' NumPy interpreter against Triton's interpreter (TRITON_INTERPRET=1) on the same kernels.

    PYTHONPATH=. python benchmarks/interp_vs_triton.py [--triton-python /tmp/tritonvenv/bin/python]

The tiles half runs in this process.  The Triton half runs in a subprocess, in an
environment with ``torch`` and ``triton`` (this interpreter if it has them, else the
one given with --triton-python), on CPU tensors.  Both halves check their outputs
against NumPy before timing, then report the median of several runs after a warm-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SIZES = {"full": dict(vec=2**20, rows=1024, cols=1024, mnk=256, sum_n=2**22),
         "quick": dict(vec=2**14, rows=64, cols=256, mnk=64, sum_n=2**14)}


def import_kernels(flavor: str):
    os.environ["BENCH_FLAVOR"] = flavor
    spec = importlib.util.spec_from_file_location("bench_kernels", HERE / "bench_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_cases(flavor: str, size: dict):
    """name -> (launch, check): launch runs the kernel once, check compares with NumPy."""
    k = import_kernels(flavor)
    if flavor == "triton":
        import torch

        def dev(a):
            return torch.from_numpy(a)
    else:
        import tiles
        tiles.set_backend("interpreter")

        def dev(a):
            return a
    rng = np.random.default_rng(0)
    cases = {}

    n = size["vec"]
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    args = [dev(a) for a in (x, y, out)]
    cases[f"vector add n={n} BLOCK=1024"] = (
        lambda: k.vector_add[(k.cdiv(n, 1024),)](*args, n, BLOCK=1024),
        lambda: np.testing.assert_array_equal(out, x + y))

    rows, cols = size["rows"], size["cols"]
    sm_in = rng.standard_normal((rows, cols), dtype=np.float32)
    sm_out = np.empty_like(sm_in)
    sm_args = [dev(sm_out), dev(sm_in)]

    def softmax_ref():
        e = np.exp(sm_in - sm_in.max(1, keepdims=True))
        np.testing.assert_allclose(sm_out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    cases[f"softmax {rows}x{cols}"] = (
        lambda: k.softmax[(rows,)](*sm_args, cols, cols, BLOCK=cols), softmax_ref)

    ln_x = rng.standard_normal((rows, cols), dtype=np.float32)
    ln_w, ln_b = rng.standard_normal(cols, dtype=np.float32), rng.standard_normal(cols, dtype=np.float32)
    ln_y = np.empty_like(ln_x)
    ln_args = [dev(a) for a in (ln_x, ln_y, ln_w, ln_b)]

    def layer_norm_ref():
        mean = ln_x.mean(1, keepdims=True, dtype=np.float64)
        var = ((ln_x - mean) ** 2).mean(1, keepdims=True)
        np.testing.assert_allclose(ln_y, (ln_x - mean) / np.sqrt(var + 1e-5) * ln_w + ln_b,
                                   rtol=1e-4, atol=1e-4)
    cases[f"layer norm {rows}x{cols}"] = (
        lambda: k.layer_norm[(rows,)](*ln_args, cols, cols, 1e-5, BLOCK=256), layer_norm_ref)

    m = size["mnk"]
    a = rng.standard_normal((m, m)).astype(np.float16)
    b = rng.standard_normal((m, m)).astype(np.float16)
    c = np.empty((m, m), np.float16)
    mm_args = [dev(t) for t in (a, b, c)]
    cases[f"matmul {m}^3 fp16 64/64/32"] = (
        lambda: k.matmul[(k.cdiv(m, 64), k.cdiv(m, 64))](*mm_args, m, m, m, m, m, m,
                                                          BLOCK_M=64, BLOCK_N=64, BLOCK_K=32),
        lambda: np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                                           rtol=1e-2, atol=5e-2))

    sn = size["sum_n"]
    s_in = rng.standard_normal(sn, dtype=np.float32)
    s_out = np.zeros(1, np.float32)
    s_args = [dev(s_in), dev(s_out)]

    def atomic_sum_launch():
        s_out[0] = 0
        k.atomic_sum[(k.cdiv(sn, 1024),)](*s_args, sn, BLOCK=1024)
    cases[f"sum of {sn} by atomic_add BLOCK=1024"] = (
        atomic_sum_launch,
        lambda: np.testing.assert_allclose(s_out[0], s_in.sum(dtype=np.float64), rtol=1e-3, atol=1e-2))
    return cases


def time_cases(flavor: str, size: dict, repeats: int) -> dict[str, float]:
    results = {}
    for name, (launch, check) in build_cases(flavor, size).items():
        launch()          # warm-up: compiles, and its output is checked
        check()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            launch()
            times.append(time.perf_counter() - start)
        results[name] = statistics.median(times)
        print(f"  [{flavor}] {name}: {results[name]:.4f} s", file=sys.stderr)
    return results


def find_triton_python(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    if importlib.util.find_spec("triton") and importlib.util.find_spec("torch"):
        return sys.executable
    venv = Path("/tmp/tritonvenv/bin/python")
    return str(venv) if venv.exists() else None


def run_triton_half(python: str, size_name: str, repeats: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([python, __file__, "--flavor", "triton", "--sizes", size_name,
                           "--repeats", str(repeats)], env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"the Triton half failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flavor", choices=["both", "tiles", "triton"], default="both")
    parser.add_argument("--sizes", choices=sorted(SIZES), default="full")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--triton-repeats", type=int, default=3)
    parser.add_argument("--triton-python", help="a Python with torch and triton installed")
    args = parser.parse_args()
    size = SIZES[args.sizes]
    if args.flavor == "triton":
        print(json.dumps(time_cases("triton", size, args.repeats)))
        return
    tiles_times = time_cases("tiles", size, args.repeats)
    triton_times: dict[str, float] = {}
    python = find_triton_python(args.triton_python) if args.flavor == "both" else None
    if python:
        triton_times = run_triton_half(python, args.sizes, args.triton_repeats)
    else:
        print("triton/torch not found: reporting tiles only", file=sys.stderr)
    print(f"{'kernel':<40} {'tiles s':>10} {'triton s':>10} {'ratio':>8}")
    for name, t in tiles_times.items():
        tr = triton_times.get(name)
        extra = f"{tr:>10.4f} {tr / t:>7.1f}x" if tr is not None else f"{'-':>10} {'-':>8}"
        print(f"{name:<40} {t:>10.4f} {extra}")


if __name__ == "__main__":
    main()
