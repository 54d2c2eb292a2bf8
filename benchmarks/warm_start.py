"""First launch of a kernel in a new process: cold (empty caches) beside warm (the disk cache
filled by an earlier process), per backend available here (interpreter, opencl, cuda).

For each example, two fresh processes share one empty TILES_CACHE_DIR (and, for OpenCL, one
empty POCL_CACHE_DIR): the first is cold, the second warm.  Each reports the time of the
first ``kernel[grid](...)`` call of every kernel the example launches (trace or cache load,
compile, the launch itself and its copies back), summed; the part of it spent getting the
compiled kernel (``JITFunction._compile``: a trace and compile, or a cache load); and the disk
cache's hit/miss counts.  Median over ``--repeat`` pairs.  Children import from bytecode
(``PYTHONDONTWRITEBYTECODE`` is dropped), as an installed tiles does.

    python benchmarks/warm_start.py [--backends interpreter,opencl] [--examples vector_add,matmul]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {p.stem.split("_", 1)[1]: p for p in sorted((ROOT / "examples").glob("[0-9]*.py"))}

CHILD = r"""
import importlib.util, json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from tiles.runtime import cache, jit

first_calls = {{}}
run = jit.JITFunction.run
def timed_run(self, *args, **kwargs):
    if self in first_calls:
        return run(self, *args, **kwargs)
    start = time.perf_counter()
    try:
        return run(self, *args, **kwargs)
    finally:
        first_calls[self] = time.perf_counter() - start
jit.JITFunction.run = timed_run
compile_time = [0.0]
compile_ = jit.JITFunction._compile
def timed_compile(self, *args, **kwargs):
    start = time.perf_counter()
    try:
        return compile_(self, *args, **kwargs)
    finally:
        compile_time[0] += time.perf_counter() - start
jit.JITFunction._compile = timed_compile
seeded = np.random.default_rng
np.random.default_rng = lambda *_: seeded(0)  # the same specializations in both processes
spec = importlib.util.spec_from_file_location("warm_case", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.main(backend={backend!r})
print(json.dumps({{"first": sum(first_calls.values()), "compile": compile_time[0], "stats": dict(cache.STATS)}}))
"""


def available(backend: str) -> bool:
    sys.path.insert(0, str(ROOT))
    from tiles.backends import registry
    return registry.status(backend)[0]


def one_process(backend: str, path: Path, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path), backend=backend)],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(backend: str, path: Path, repeat: int) -> tuple[list[dict], list[dict]]:
    colds, warms = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tiles_cache, tempfile.TemporaryDirectory() as pocl_cache:
            env = {**os.environ, "TILES_CACHE_DIR": tiles_cache, "POCL_CACHE_DIR": pocl_cache}
            env.pop("TILES_ALWAYS_COMPILE", None)
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports from bytecode
            colds.append(one_process(backend, path, env))
            warms.append(one_process(backend, path, env))
    return colds, warms


def median(runs: list[dict], field: str) -> float:
    return statistics.median(run[field] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="interpreter,opencl,cuda")
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'backend':12s} {'example':18s} {'first launch: cold':>19s} {'warm':>9s} {'speed-up':>9s}"
          f"   {'of which compiling: cold':>25s} {'warm':>9s}   warm process's cache counts", flush=True)
    for backend in args.backends.split(","):
        if not available(backend):
            print(f"{backend:12s} (not available here)", flush=True)
            continue
        for name in args.examples.split(","):
            colds, warms = measure(backend, EXAMPLES[name], args.repeat)
            cold, warm = median(colds, "first"), median(warms, "first")
            print(f"{backend:12s} {name:18s} {cold:17.3f} s {warm:7.3f} s {cold / warm:8.1f}x"
                  f"   {median(colds, 'compile'):23.3f} s {median(warms, 'compile'):7.3f} s   {warms[-1]['stats']}",
                  flush=True)


if __name__ == "__main__":
    main()
