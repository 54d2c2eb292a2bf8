"""Cold compile time on the OpenCL backend (pocl here): every example and a sample of the corpus.

Each case runs in a new process with empty caches (a fresh TILES_CACHE_DIR with
TILES_ALWAYS_COMPILE=1, a fresh POCL_CACHE_DIR) on ``TILES_BACKEND=opencl`` and reports the
wall time of the whole case (trace, lowering, pocl build, first launches, the check), the
time in each compile stage, the binary fetch, the first launches (where pocl generates the
work-group code) and the size of the generated OpenCL C.  ``--before REF`` runs the same
cases, side by side in this run, on the tiles of a git commit (exported to a temp folder).

    python benchmarks/pocl_compile.py --before 333f4c2 [--cases matmul,attention] [--timeout 600]

The ``attn_res MAX_BLOCKS=n`` cases run ``liger2_attn_res``'s forward and backward with
``n - n // 4`` blocks (a tl.static_range of n whose body's reductions sit under a run-time ``if``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {p.stem.split("_", 1)[1]: p for p in sorted((ROOT / "examples").glob("[0-9]*.py"))}
CORPUS = ["tut02_fused_softmax", "tut03_matmul_swizzle2d", "tut05_layer_norm_fwd", "liger_rms_norm",
          "liger_cross_entropy", "fg_topk", "fla_chunk_scan_dot", "tut06_fused_attention"]
BIG_ADD_BLOCKS = [2**16, 2**20]
ATTN_RES_MAX_BLOCKS = [1, 2, 4, 8]  # liger2_attn_res: reductions under a run-time if in a static_range

CHILD = r"""
import importlib.util, json, sys, time
sys.path[:0] = [{tiles_root!r}, {compat!r}]
import numpy as np
import tiles
from tiles.backends.opencl import OpenCLBackend
from tiles.backends.opencl import runtime
from tiles.runtime import jit

times = {{"c_bytes": 0}}
def add(name, seconds):
    times[name] = times.get(name, 0.0) + seconds

def timed(owner, attr, label):
    inner = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            add(label, time.perf_counter() - start)
    setattr(owner, attr, wrapper)

timed(jit.JITFunction, "trace", "trace")
timed(runtime, "launch", "launches")
import pyopencl as cl
binaries = cl.Program.binaries
def timed_binaries(program):
    start = time.perf_counter()
    try:
        return binaries.__get__(program)
    finally:
        add("binary_fetch", time.perf_counter() - start)
cl.Program.binaries = property(timed_binaries)
stages = OpenCLBackend.stages
def timed_stages(self, options):
    def wrap(name, stage):
        def run(value, compiled):
            start = time.perf_counter()
            out = stage(value, compiled)
            add("stage_" + name, time.perf_counter() - start)
            if name == "opencl":
                times["c_bytes"] += len(out)
            return out
        return run
    return {{name: wrap(name, stage) for name, stage in stages(self, options).items()}}
OpenCLBackend.stages = timed_stages

def load(path):
    spec = importlib.util.spec_from_file_location("bench_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

kind, what = {kind!r}, {what!r}
start = time.perf_counter()
if kind == "example":
    load(what).main(backend="opencl")
elif kind == "corpus":
    load(what).check(np.random.default_rng(0))
elif kind == "attn-res":
    max_blocks = int(what)
    load({attn_res!r}).run(np.random.default_rng(0), max_blocks - max_blocks // 4, max_blocks)
else:
    add_kernel = load({add_example!r}).add_kernel
    n = int(what)
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    add_kernel[(1,)](x, x, out, n, BLOCK=n, backend="opencl")
    np.testing.assert_array_equal(out, x + x)
times["wall"] = time.perf_counter() - start
print(json.dumps(times))
"""


def cases(selected: set[str] | None) -> list[tuple[str, str, str]]:
    found = [(name, "example", str(path)) for name, path in EXAMPLES.items()]
    found += [(name, "corpus", str(ROOT / "tests" / "compat" / "kernels" / f"{name}.py")) for name in CORPUS]
    found += [(f"add BLOCK=2**{block.bit_length() - 1}", "big-add", str(block)) for block in BIG_ADD_BLOCKS]
    found += [(f"attn_res MAX_BLOCKS={n}", "attn-res", str(n)) for n in ATTN_RES_MAX_BLOCKS]
    return [c for c in found if selected is None or c[0] in selected]


def run_case(tiles_root: Path, kind: str, what: str, timeout: float) -> dict[str, float] | str:
    with tempfile.TemporaryDirectory() as tiles_cache, tempfile.TemporaryDirectory() as pocl_cache:
        env = {**os.environ, "TILES_CACHE_DIR": tiles_cache, "TILES_ALWAYS_COMPILE": "1",
               "POCL_CACHE_DIR": pocl_cache, "TILES_BACKEND": "opencl"}
        script = CHILD.format(tiles_root=str(tiles_root), compat=str(ROOT / "tests" / "compat"), kind=kind,
                              what=what, add_example=str(EXAMPLES["vector_add"]),
                              attn_res=str(ROOT / "tests" / "compat" / "kernels" / "liger2_attn_res.py"))
        try:
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                  env=env, timeout=timeout, cwd=tempfile.gettempdir())
        except subprocess.TimeoutExpired:
            return f"> {timeout:.0f} s"
    if done.returncode != 0:
        return "failed: " + done.stderr.strip().splitlines()[-1][:120]
    return json.loads(done.stdout.strip().splitlines()[-1])


def export(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tiles"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def describe(result: dict[str, float] | str) -> str:
    if isinstance(result, str):
        return result
    fetch = result.get("binary_fetch", 0.0)
    build = result.get("stage_build", result.get("stage_binary", 0.0)) - fetch
    return (f"{result['wall']:7.1f} s (trace {result.get('trace', 0):.1f}, C {result.get('stage_opencl', 0):.1f}"
            f" s/{result['c_bytes'] / 1024:.0f} KiB, build {build:.1f}, binary {fetch:.1f}, "
            f"launches {result.get('launches', 0):.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="git commit whose tiles runs beside this one")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per case and tiles")
    args = parser.parse_args()
    import pyopencl as cl

    sys.path.insert(0, str(ROOT))
    from tiles.backends.opencl import runtime
    device = runtime.device()[2]
    print(f"device: {device.platform.name} {device.platform.version} / {device.name}", flush=True)
    selected = set(args.cases.split(",")) if args.cases else None
    with tempfile.TemporaryDirectory() as peer:
        trees = [("after", ROOT)]
        if args.before:
            trees.insert(0, (f"before ({args.before})", export(args.before, Path(peer))))
        for name, kind, what in cases(selected):
            for label, tree in trees:
                print(f"{name:28s} {label:18s} {describe(run_case(tree, kind, what, args.timeout))}", flush=True)
    del cl


if __name__ == "__main__":
    main()
