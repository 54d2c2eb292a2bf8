"""tiles' NumPy interpreter against Triton's interpreter (TRITON_INTERPRET=1) on the same kernels.

    PYTHONPATH=. python benchmarks/interp_vs_triton.py [--triton-python /tmp/tritonvenv/bin/python]

The tiles half runs in this process.  The Triton half runs in a subprocess, in an
environment with ``torch`` and ``triton`` (this interpreter if it has them, else the
one given with --triton-python), on CPU tensors.  Both halves check their outputs
against NumPy before timing, then report the median of several runs after a warm-up,
as wall-clock time and as CPU time of the process (the CPU ratio is the steadier one on
a shared machine).  The autotuned kernel is tuned during the warm-up on both sides, with
the same ``do_bench`` (one timed call per config: Triton's default benchmarker needs a
GPU driver and fails under TRITON_INTERPRET=1 without one); the timed runs use the
chosen config, as later calls of a tuned kernel do.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from interp_timing import time_launch  # noqa: E402

SIZES = {"full": dict(vec=2**20, rows=1024, cols=1024, mnk=256, sum_n=2**22,
                     persistent=(512, 512, 256, 12), tuned=(384, 320, 200), scan=(64, 4096),
                     attention=(16, 1024, 64), groups=((128, 128, 128), (256, 64, 192),
                                                       (96, 160, 64), (200, 130, 90)), group_sms=8),
         "quick": dict(vec=2**14, rows=64, cols=256, mnk=64, sum_n=2**14,
                       persistent=(128, 96, 80, 5), tuned=(96, 80, 72), scan=(8, 700),
                       attention=(2, 100, 16), groups=((64, 64, 32), (40, 72, 48)), group_sms=3)}


def import_kernels(flavor: str, name: str = "bench_kernels"):
    os.environ["BENCH_FLAVOR"] = flavor
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
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
    cases.update(loop_cases(flavor, size, dev, rng))
    return cases


def _matmul_check(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    want = a.astype(np.float32) @ b.astype(np.float32)
    return lambda: np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=5e-2)


def loop_cases(flavor: str, size: dict, dev, rng):
    """The loop-heavy kernels of loop_kernels.py: name -> (launch, check)."""
    k = import_kernels(flavor, "loop_kernels")
    cases = {}

    def fp16(*shape):
        return rng.standard_normal(shape).astype(np.float16)

    m, n, kk, sms = size["persistent"]
    a, b, c = fp16(m, kk), fp16(kk, n), np.zeros((m, n), np.float16)
    pa, pb, pc = (dev(t) for t in (a, b, c))
    cases[f"persistent matmul {m}x{n}x{kk} fp16 on {sms} programs"] = (
        lambda: k.persistent_matmul[(sms,)](pa, pb, pc, m, n, kk, kk, 1, n, 1, n, 1, NUM_SMS=sms,
                                            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=4),
        _matmul_check(a, b, c))

    tm, tn, tk = size["tuned"]
    ta, tb, tc = fp16(tm, tk), fp16(tk, tn), np.zeros((tm, tn), np.float16)
    qa, qb, qc = (dev(t) for t in (ta, tb, tc))

    def tuned_grid(meta):
        return (k.cdiv(tm, meta["BLOCK_M"]) * k.cdiv(tn, meta["BLOCK_N"]),)
    cases[f"autotuned matmul {tm}x{tn}x{tk} fp16 (2 configs)"] = (
        lambda: k.tuned_matmul[tuned_grid](qa, qb, qc, tm, tn, tk, tk, 1, tn, 1, tn, 1),
        _matmul_check(ta, tb, tc))

    rows, cols = size["scan"]
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    y = np.zeros_like(x)
    px, py = dev(x), dev(y)
    cases[f"chunked cumsum {rows}x{cols} BLOCK=256"] = (
        lambda: k.chunked_cumsum[(rows,)](px, py, cols, cols, BLOCK=256),
        lambda: np.testing.assert_allclose(y, np.cumsum(x, axis=1, dtype=np.float64),
                                           rtol=1e-4, atol=2e-3))

    bh, t, d = size["attention"]
    q, kt, v = (rng.standard_normal((bh, t, d), dtype=np.float32) * 0.1 for _ in range(3))
    o = np.zeros_like(q)
    dq, dk, dv, do = (dev(z) for z in (q, kt, v, o))

    def attention_check():
        scores = np.tril(q.astype(np.float64) @ kt.transpose(0, 2, 1))
        np.testing.assert_allclose(o, scores @ v, rtol=1e-3, atol=1e-3)
    cases[f"chunked linear attention {bh}x{t}x{d} CHUNK=64"] = (
        lambda: k.chunked_linear_attention[(bh,)](dq, dk, dv, do, t, D=d, CHUNK=64), attention_check)

    shapes = size["groups"]
    ga = [fp16(gm, gk) for gm, gn, gk in shapes]
    gb = [fp16(gk, gn) for gm, gn, gk in shapes]
    gc = [np.zeros((gm, gn), np.float16) for gm, gn, gk in shapes]
    held = [[dev(t) for t in group] for group in (ga, gb, gc)]  # the host keeps them alive
    tables = [dev(np.array([_address(t) for t in group], np.int64)) for group in held]
    sizes = dev(np.array(shapes, np.int32).ravel())
    lds = dev(np.array([(gk, gn, gn) for gm, gn, gk in shapes], np.int32).ravel())
    gsms = size["group_sms"]

    def grouped_check():
        for ai, bi, ci in zip(ga, gb, gc):
            _matmul_check(ai, bi, ci)()
    cases[f"grouped GEMM of {len(shapes)} (address table) on {gsms} programs"] = (
        lambda: k.grouped_matmul[(gsms,)](*tables, sizes, lds, len(shapes), NUM_SMS=gsms,
                                          BLOCK_M=64, BLOCK_N=64, BLOCK_K=32),
        grouped_check)
    return cases


def _address(t) -> int:
    """The device address of an array: ``data_ptr()`` for torch, ``ctypes.data`` for NumPy."""
    return t.data_ptr() if hasattr(t, "data_ptr") else t.ctypes.data


def time_cases(flavor: str, size: dict, repeats: int, only: str = "") -> dict[str, list[float]]:
    """name -> [median wall-clock s, median CPU s of the process, wall-clock s of the first call]."""
    results = {}
    for name, (launch, check) in build_cases(flavor, size).items():
        if only and not re.search(only, name):
            continue
        results[name] = time_launch(launch, check, repeats)  # the warm-up call is checked
        print(f"  [{flavor}] {name}: {results[name][0]:.4f} s wall, {results[name][1]:.4f} s CPU",
              file=sys.stderr)
    return results


def find_triton_python(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    if importlib.util.find_spec("triton") and importlib.util.find_spec("torch"):
        return sys.executable
    venv = Path("/tmp/tritonvenv/bin/python")
    return str(venv) if venv.exists() else None


def run_triton_half(python: str, size_name: str, repeats: int, only: str) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([python, __file__, "--flavor", "triton", "--sizes", size_name,
                           "--repeats", str(repeats), "--only", only], env=env, capture_output=True, text=True)
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
    parser.add_argument("--only", default="", help="time only the kernels whose name matches this regex")
    args = parser.parse_args()
    size = SIZES[args.sizes]
    if args.flavor == "triton":
        print(json.dumps(time_cases("triton", size, args.repeats, args.only)))
        return
    tiles_times = time_cases("tiles", size, args.repeats, args.only)
    triton_times: dict[str, list[float]] = {}
    python = find_triton_python(args.triton_python) if args.flavor == "both" else None
    if python:
        triton_times = run_triton_half(python, args.sizes, args.triton_repeats, args.only)
    else:
        print("triton/torch not found: reporting tiles only", file=sys.stderr)
    width = max(40, *map(len, tiles_times))
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"sizes={args.sizes}")
    print(f"{'kernel':<{width}} {'tiles s':>9} {'triton s':>9} {'ratio':>7}   "
          f"{'tiles CPU':>9} {'triton CPU':>10} {'ratio':>7}   {'1st call':>8} {'triton 1st':>10}")
    for name, (wall, cpu, first) in tiles_times.items():
        if name in triton_times:
            twall, tcpu, tfirst = triton_times[name]
            extra = (f"{twall:>9.4f} {twall / wall:>6.1f}x   {cpu:>9.4f} {tcpu:>10.4f} "
                     f"{tcpu / max(cpu, 1e-9):>6.1f}x   {first:>8.3f} {tfirst:>10.3f}")
        else:
            extra = f"{'-':>9} {'-':>7}   {cpu:>9.4f} {'-':>10} {'-':>7}   {first:>8.3f} {'-':>10}"
        print(f"{name:<{width}} {wall:>9.4f} {extra}")


if __name__ == "__main__":
    main()
