"""tiles' interpreter against Triton's interpreter on real-form workloads, run as test suites run them.

    /work/tvenv/bin/python benchmarks/interp_real_workloads.py [--runs 5] [--triton-runs 3]
        [--baseline-root OTHER_CHECKOUT] [--only REGEX]

(``--baseline-root``: a before/after, e.g. ``git archive <commit> tiles | tar -x -C /tmp/base``.)

A row is a workload: a kernel of ``real_workload_kernels.py`` (Liger-style RMSNorm, cross
entropy and SwiGLU behind autograd wrappers, tutorial layer norm and matmul, a one-program
long loop, a FlagGems-style pointwise op) run over a test suite's parameter grid of shapes and
dtypes, so most launches meet a new specialization, plus one row of many launches of one
specialization.  Both halves run in fresh subprocesses of a Python with torch and Triton:
Triton's with ``TRITON_INTERPRET=1``, tiles' with ``tiles.install_as_triton()`` and an empty
``TILES_CACHE_DIR`` (nothing traced before), so both run the same source on CPU tensors.

Times are CPU seconds of each process (``time.process_time``, torch on one thread): steadier
than wall-clock time on a shared machine; the cold run's wall-clock ratio is printed too.
Per row: the **cold** run (every specialization new: what a test suite pays, the ratio that
counts), then the median of ``--repeats`` **warm** runs (every specialization cached).  For
tiles the cold run is split into trace (the tracer, ``JITFunction.trace`` less the IR passes),
prepare (the rest of a new specialization's set-up: classifying arguments, IR passes, the
backend's compile, the launcher, the interpreter's plan), disk cache (key, lookup, store),
execute (the interpreter walking the IR) and other (binding on the hot path, the host
wrappers' torch calls);
"specs" counts new specializations (launch keys compiled), "traces" those traced (the interpreter
traces once for keys that differ only in divisibility); "per spec" is (cold - warm) / specs, the
first-launch cost of a specialization.
Outputs are checked against torch after the cold run on both sides.  Each half runs ``--runs``
(tiles) / ``--triton-runs`` times in fresh processes; the table shows per-figure medians.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRITON_PYTHON = "/work/tvenv/bin/python"


def workloads(k, torch) -> dict[str, Callable[[], list[tuple[object, Callable[[], object], float]]]]:
    """name -> run(): runs the workload once, returns (got, want_fn, tol) for the checks."""
    f16, f32 = torch.float16, torch.float32
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, dtype=f32):
        return torch.randn(*shape, generator=gen, dtype=f32).to(dtype)

    def rms_norm():
        out = []
        for shape in [(2, 8, 64), (4, 16, 128), (1, 1, 1023), (3, 7, 256), (9, 17, 77), (2, 32, 512)]:
            for dtype in (f32, f16):
                x = randn(*shape, dtype=dtype).requires_grad_()
                w = (randn(shape[-1]) + 1).to(dtype).requires_grad_()
                dy = randn(*shape, dtype=dtype)
                y = k.RMSNorm.apply(x, w, 1e-6)
                y.backward(dy)

                def want(x=x, w=w, dy=dy):
                    xr, wr = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
                    yr = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * wr
                    yr.backward(dy.float())
                    return torch.cat([yr.flatten(), xr.grad.flatten(), wr.grad.flatten()])
                tol = 2e-2 if dtype == f16 else 1e-4
                out.append((torch.cat([y.detach().float().flatten(), x.grad.float().flatten(),
                                       w.grad.float().flatten()]), want, tol))
        return out

    def cross_entropy():
        out = []
        for rows, vocab in [(8, 1000), (4, 4096), (16, 3000), (3, 32000), (7, 517)]:
            for dtype in (f32, f16):
                logits = randn(rows, vocab, dtype=dtype).requires_grad_()
                target = torch.randint(0, vocab, (rows,), generator=gen)
                target[rows // 2] = -100
                loss = k.CrossEntropy.apply(logits, target, -100)
                loss.backward()

                def want(logits=logits, target=target):
                    lr = logits.detach().float().requires_grad_()
                    ref = torch.nn.functional.cross_entropy(lr, target, ignore_index=-100)
                    ref.backward()
                    return torch.cat([ref.reshape(1), lr.grad.flatten()])
                tol = 2e-2 if dtype == f16 else 1e-4
                out.append((torch.cat([loss.detach().reshape(1), logits.grad.float().flatten()]), want, tol))
        return out

    def swiglu():
        out = []
        for shape in [(2, 4, 128), (8, 33, 311), (1, 64, 1024), (3, 5, 4096)]:
            for dtype in (f32, f16):
                a, b = (randn(*shape, dtype=dtype).requires_grad_() for _ in range(2))
                dc = randn(*shape, dtype=dtype)
                c = k.SwiGLU.apply(a, b)
                c.backward(dc)

                def want(a=a, b=b, dc=dc):
                    ar, br = (t.detach().float().requires_grad_() for t in (a, b))
                    cr = torch.nn.functional.silu(ar) * br
                    cr.backward(dc.float())
                    return torch.cat([cr.flatten(), ar.grad.flatten(), br.grad.flatten()])
                tol = 3e-2 if dtype == f16 else 1e-4
                out.append((torch.cat([c.detach().float().flatten(), a.grad.float().flatten(),
                                       b.grad.float().flatten()]), want, tol))
        return out

    def layer_norm():
        out = []
        for rows, n in [(16, 1000), (8, 4096), (32, 257), (4, 8192)]:
            for dtype in (f16, f32):
                x, w, b = randn(rows, n, dtype=dtype), randn(n, dtype=dtype), randn(n, dtype=dtype)
                y = k.layer_norm(x, w, b)
                out.append((y.float(), lambda x=x, w=w, b=b: torch.nn.functional.layer_norm(
                    x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5), 2e-2 if dtype == f16 else 1e-4))
        return out

    def matmul():
        out = []
        for m, n, kk in [(32, 32, 1024), (64, 48, 512), (17, 33, 2048), (96, 96, 256)]:
            a, b = randn(m, kk, dtype=f16), randn(kk, n, dtype=f16)
            out.append((k.matmul(a, b).float(), lambda a=a, b=b: a.float() @ b.float(), 5e-2))
        return out

    def long_loop():
        out = []
        for n, block in [(1 << 16, 64), (100000, 128), ((1 << 17) + 3, 128)]:
            x = randn(n)
            out.append((k.long_sum(x, block), lambda x=x: x.double().sum().float().reshape(1), 1e-3))
        return out

    def pointwise():
        out = []
        for dtype in (f16, f32, torch.float64, torch.int32, torch.int64, torch.int16):
            for n in (1000, 4097, 65536):
                if dtype.is_floating_point:
                    x, y, alpha = randn(n, dtype=dtype), randn(n, dtype=dtype), 0.5
                else:
                    x, y = (torch.randint(-100, 100, (n,), generator=gen, dtype=dtype) for _ in range(2))
                    alpha = 3
                out.append((k.add_alpha(x, y, alpha).double(),
                            lambda x=x, y=y, a=alpha: (x + y * a).double(), 1e-2))
        return out

    def small_launches():
        x, y = randn(4096), randn(4096)
        outs = [k.add_alpha(x, y, 2.0) for _ in range(300)]
        return [(outs[-1], lambda: x + y * 2.0, 1e-6)]

    return {"rms_norm autograd fwd+bwd, 6 shapes x 2 dtypes": rms_norm,
            "cross_entropy autograd (vocab loop), 5 shapes x 2 dtypes": cross_entropy,
            "swiglu autograd fwd+bwd, 4 shapes x 2 dtypes": swiglu,
            "layer_norm fwd (column loops), 4 shapes x 2 dtypes": layer_norm,
            "matmul fp16 K loop, tiny grids, 4 shapes": matmul,
            "one program, 782-1025 loop iterations, 3 sizes": long_loop,
            "pointwise add_alpha, 6 dtypes x 3 sizes": pointwise,
            "300 launches of one specialization (n=4096)": small_launches}


class Timers:
    """CPU seconds spent in wrapped functions."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._depth = 0

    def wrap(self, owner, attr: str, label: str, subtract_from: str | None = None) -> None:
        inner = getattr(owner, attr)
        timers = self

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                timers.totals[label] = timers.totals.get(label, 0.0) + spent
                if subtract_from:
                    timers.totals[subtract_from] = timers.totals.get(subtract_from, 0.0) - spent
        setattr(owner, attr, timed)


def instrument() -> Timers:
    """Time the tracer, the preparation of a specialization, the disk cache and the interpreter's walk."""
    import tiles.interp
    from tiles.core import passes
    from tiles.interp import executor
    from tiles.runtime import cache
    from tiles.runtime.jit import JITFunction
    t = Timers()
    t.wrap(JITFunction, "_prepare_launch", "prepare")
    t.wrap(JITFunction, "trace", "trace", subtract_from="prepare")
    t.wrap(passes, "run_pipeline", "prepare", subtract_from="trace")
    for name in ("compile_key", "load", "store"):
        t.wrap(cache, name, "cache", subtract_from="prepare")
    t.wrap(tiles.interp, "interpret", "execute")
    t.wrap(executor, "plan_of", "prepare", subtract_from="execute")
    compile_ = JITFunction._compile

    def counted(self, *args, **kwargs):  # one call per new specialization (a launch key compiled)
        t.totals["keys"] = t.totals.get("keys", 0) + 1
        return compile_(self, *args, **kwargs)
    JITFunction._compile = counted
    return t


def warm_up(k, torch) -> float:
    """Seconds of what a process pays once, kept out of the rows: torch's lazy imports on its first
    backward and loss, and a first launch of a specialization no row uses."""
    start = time.process_time()
    x = torch.ones(3, requires_grad=True)
    torch.nn.functional.cross_entropy(x[None] * 2, torch.zeros(1, dtype=torch.long)).backward()
    torch.testing.assert_close(k.long_sum(torch.ones(10), 16), torch.full((1,), 10.0))
    return time.process_time() - start


def run_half(flavor: str, repeats: int, only: str) -> dict[str, dict[str, float]]:
    """Time every workload in this process; name -> figures."""
    if flavor == "tiles":
        import tiles
        tiles.install_as_triton()
        timers = instrument()
        from tiles.runtime.cache import STATS
    import torch
    sys.path.insert(0, str(HERE))
    import real_workload_kernels as k
    torch.set_num_threads(1)
    results = {"process warm-up": {"cold": warm_up(k, torch), "cold_wall": float("nan")}}
    for name, run in workloads(k, torch).items():
        if only and not re.search(only, name):
            continue
        if flavor == "tiles":
            timers.totals.clear()
            traces = STATS["traces"]
        start, cpu = time.perf_counter(), time.process_time()
        checks = run()
        cold, wall = time.process_time() - cpu, time.perf_counter() - start
        row = {"cold": cold, "cold_wall": wall}
        if flavor == "tiles":
            row.update(timers.totals, traces=STATS["traces"] - traces)
            row["specs"] = row.pop("keys", 0)
        for got, want, tol in checks:
            torch.testing.assert_close(got, want(), rtol=tol, atol=tol, check_dtype=False)
        warm = []
        for _ in range(repeats):
            cpu = time.process_time()
            run()
            warm.append(time.process_time() - cpu)
        row["warm"] = statistics.median(warm) if warm else float("nan")
        results[name] = row
        print(f"  [{flavor}] {name}: cold {cold:.3f} s CPU ({wall:.3f} s wall), warm {row['warm']:.3f} s CPU",
              file=sys.stderr)
    return results


def spawn(flavor: str, repeats: int, only: str, python: str, tiles_root: str) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    if flavor == "triton":
        env.pop("PYTHONPATH", None)
        env.pop("TILES_AS_TRITON", None)
        env["TRITON_INTERPRET"] = "1"
    else:
        env["PYTHONPATH"] = tiles_root
        env["TILES_BACKEND"] = "interpreter"
        env["TILES_CACHE_DIR"] = tempfile.mkdtemp(prefix="tiles-real-workloads-")
    proc = subprocess.run([python, __file__, "--flavor", flavor, "--repeats", str(repeats), "--only", only],
                          env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"the {flavor} half failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per row and figure, the median over runs (a figure missing from a run counts as 0)."""
    out = {}
    for name in runs[0]:
        keys = set().union(*(r[name] for r in runs))
        out[name] = {k: statistics.median(r[name].get(k, 0.0) for r in runs) for k in keys}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flavor", choices=["both", "tiles", "triton"], default="both")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="fresh tiles processes; each figure is their median")
    parser.add_argument("--triton-runs", type=int, default=1, help="fresh Triton processes (its figures vary less)")
    parser.add_argument("--only", default="", help="only the workloads whose name matches this regex")
    parser.add_argument("--python", default=TRITON_PYTHON, help="a Python with torch and triton")
    parser.add_argument("--tiles-root", default=str(HERE.parent), help="the folder holding the tiles package to time")
    parser.add_argument("--baseline-root", help="another checkout's folder, timed alternately with --tiles-root "
                        "against the same Triton runs (a before/after)")
    args = parser.parse_args()
    if args.flavor != "both":
        print(json.dumps(run_half(args.flavor, args.repeats, args.only)))
        return
    roots = [args.tiles_root] + ([args.baseline_root] if args.baseline_root else [])
    runs: dict[str, list[dict[str, dict[str, float]]]] = {root: [] for root in roots}
    for _ in range(args.runs):  # alternating, so that both meet the same load on a shared machine
        for root in reversed(roots):
            runs[root].append(spawn("tiles", args.repeats, args.only, args.python, root))
    theirs = median_of([spawn("triton", args.repeats, args.only, args.python, args.tiles_root)
                        for _ in range(args.triton_runs)])
    for root in reversed(roots):
        print(f"\ntiles from {root}: median of {args.runs} processes; Triton 3.9 interpreter: median of "
              f"{args.triton_runs}")
        print_table(median_of(runs[root]), theirs)


def print_table(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]) -> None:
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "(CPU seconds of each process; wall ratio for scale)")
    print("| workload | tiles cold s | Triton cold s | ratio | wall ratio | tiles warm s | Triton warm s | warm ratio "
          "| trace s | prepare s | disk cache s | execute s | other s | specs | traces | per spec ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in ours.items():
        t = theirs[name]
        head = f"| {name} | {r['cold']:.3f} | {t['cold']:.3f} | {t['cold'] / r['cold']:.1f}x |"
        if name == "process warm-up":
            print(head + " |" * 12)
            continue
        specs = int(r.get("specs", 0))
        parts = [r.get(p, 0.0) for p in ("trace", "prepare", "cache", "execute")]
        other = r["cold"] - sum(parts)
        per_spec = (r["cold"] - r["warm"]) / specs * 1e3 if specs else float("nan")
        print(head + f" {t['cold_wall'] / r['cold_wall']:.1f}x | {r['warm']:.3f} | {t['warm']:.3f} | "
              f"{t['warm'] / r['warm']:.1f}x | " + " | ".join(f"{p:.3f}" for p in (*parts, other))
              + f" | {specs} | {int(r.get('traces', 0))} | {per_spec:.1f} |")

if __name__ == "__main__":
    main()
