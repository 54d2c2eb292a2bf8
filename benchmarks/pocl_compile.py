"""Cold compile time on the OpenCL backend (pocl here): every example and a sample of the corpus.

Each case runs in a new process with empty caches (a fresh TILES_CACHE_DIR with
TILES_ALWAYS_COMPILE=1, a fresh POCL_CACHE_DIR) on ``TILES_BACKEND=opencl`` and reports the
wall time of the whole case (trace, lowering, pocl build, first launches, the check), the
time in each compile stage, the binary fetch, the first launches (where pocl generates the
work-group code) and the size of the generated OpenCL C.  ``--before REF`` runs the same
cases, side by side in this run, on the tiles of a git commit (exported to a temp folder).

    python benchmarks/pocl_compile.py --before 333f4c2 [--cases matmul,attention] [--timeout 600]

The ``attn_res MAX_BLOCKS=n`` cases run ``liger/attn_res``'s forward and backward with
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {p.stem.split("_", 1)[1]: p for p in sorted((ROOT / "examples").glob("[0-9]*.py"))}
CORPUS_DIR = ROOT / "tests" / "compat" / "kernels"
CORPUS = sorted(CORPUS_DIR.glob("*/*.py"))  # one folder per source project
GEMM_FORMS = ["wrap", "no-masks", "persistent"]  # realworld_gemm.py's forms, each over its CONFIGS, at 256^3
ATTENTION_HEAD_DIMS = [64]  # realworld_attention.py's block-pointer form over its CONFIGS
BIG_ADD_BLOCKS = [2**16, 2**20]
ATTN_RES_MAX_BLOCKS = [1, 2, 4, 8]  # liger/attn_res: reductions under a run-time if in a static_range

CHILD = r"""
import importlib.util, json, math, sys, time
sys.path[:0] = [{tiles_root!r}, {compat!r}, {benchmarks!r}]
import numpy as np
import tiles
from tiles.backends.opencl import OpenCLBackend
from tiles.backends.opencl import runtime
from tiles.runtime import jit

times = {{"c_bytes": 0}}
kernels = {{}}  # id(compiled) -> {{name, lines, seconds in C / build / first launch}}
def add(name, seconds):
    times[name] = times.get(name, 0.0) + seconds

def record(compiled):
    return kernels.setdefault(id(compiled), {{"name": compiled.name, "lines": 0, "c": 0.0, "build": 0.0,
                                              "launch": 0.0, "keep": compiled}})

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
stages = OpenCLBackend.stages
def timed_stages(self, options):
    def wrap(name, stage):
        def run(value, compiled):
            start = time.perf_counter()
            out = stage(value, compiled)
            seconds = time.perf_counter() - start
            add("stage_" + name, seconds)
            if name == "opencl":
                text = out if isinstance(out, str) else out.asm  # a stage may return a Staged
                times["c_bytes"] += len(text)
                record(compiled)["lines"] = text.count("\n") + 1
                record(compiled)["c"] += seconds
            elif name == "build":
                record(compiled)["build"] += seconds
            return out
        return run
    return {{name: wrap(name, stage) for name, stage in stages(self, options).items()}}
OpenCLBackend.stages = timed_stages
first_launch = OpenCLBackend.launch
def timed_launch(self, compiled, *args, **kwargs):
    if "launched" in compiled.loaded:
        return first_launch(self, compiled, *args, **kwargs)
    start = time.perf_counter()
    try:
        return first_launch(self, compiled, *args, **kwargs)
    finally:
        record(compiled)["launch"] += time.perf_counter() - start
OpenCLBackend.launch = timed_launch

def load(path):
    spec = importlib.util.spec_from_file_location("bench_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def gemm_form(form):
    import tempfile
    from pathlib import Path
    import realworld_gemm as rg
    from memory_bound import load_kernels
    mod = load_kernels("tiles", Path(tempfile.mkdtemp()), rg.KERNELS, "realworld_gemm")
    rng = np.random.default_rng(0)
    m = n = k = 256
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    for bm, bn, bk, warps, stages in rg.CONFIGS:
        c = np.zeros((m, n), np.float16)
        strides = (k, 1, n, 1, n, 1)
        meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
        tiles_total = math.ceil(m / bm) * math.ceil(n / bn)
        if form == "persistent":
            mod.persistent_matmul[(min(2, tiles_total),)](a, b, c, m, n, k, *strides, NUM_SMS=2, **meta)
        else:
            mod.tutorial_matmul[(tiles_total,)](a, b, c, m, n, k, *strides, WRAP_AND_MASK=form == "wrap", **meta)
        np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=0.25)

def attention_form(d):
    import tempfile
    from pathlib import Path
    import realworld_attention as ra
    from memory_bound import load_kernels
    mod = load_kernels("tiles", Path(tempfile.mkdtemp()), ra.KERNELS, "realworld_attention")
    rng = np.random.default_rng(0)
    z, h, n_ctx = 1, 2, 128
    q, k, v = (rng.standard_normal((z, h, n_ctx, d)).astype(np.float16) for _ in range(3))
    scale = 1 / math.sqrt(d)
    s = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float32), k.astype(np.float32)) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("zhmn,zhnd->zhmd", p / p.sum(-1, keepdims=True), v.astype(np.float32))
    st = lambda x: tuple(s // x.itemsize for s in x.strides)
    for bm, bn, warps, stages in ra.CONFIGS:
        if bn > d:
            continue
        o = np.zeros_like(q)
        m = np.zeros((z, h, n_ctx), np.float32)
        mod.attn_fwd[(math.ceil(n_ctx / bm), z * h)](q, k, v, scale, m, o, *st(q), *st(k), *st(v), *st(o), z, h, n_ctx,
                                                     HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=1, num_warps=warps,
                                                     num_stages=stages)
        np.testing.assert_allclose(o.astype(np.float32), want, rtol=2e-2, atol=2e-2)

kind, what = {kind!r}, {what!r}
start = time.perf_counter()
if kind == "example":
    load(what).main(backend="opencl")
elif kind == "corpus":
    load(what).check(np.random.default_rng(0))
elif kind == "attn-res":
    max_blocks = int(what)
    load({attn_res!r}).run(np.random.default_rng(0), max_blocks - max_blocks // 4, max_blocks)
elif kind == "gemm":
    gemm_form(what)
elif kind == "attention":
    attention_form(int(what))
else:
    add_kernel = load({add_example!r}).add_kernel
    n = int(what)
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    add_kernel[(1,)](x, x, out, n, BLOCK=n, backend="opencl")
    np.testing.assert_array_equal(out, x + x)
times["wall"] = time.perf_counter() - start
for entry in kernels.values():
    del entry["keep"]
times["kernels"] = list(kernels.values())
print(json.dumps(times))
"""


def cases(selected: set[str] | None) -> list[tuple[str, str, str]]:
    found = [(name, "example", str(path)) for name, path in EXAMPLES.items()]
    found += [(path.relative_to(CORPUS_DIR).with_suffix("").as_posix(), "corpus", str(path)) for path in CORPUS]
    found += [(f"gemm {form}", "gemm", form) for form in GEMM_FORMS]
    found += [(f"attention d={d}", "attention", str(d)) for d in ATTENTION_HEAD_DIMS]
    found += [(f"add BLOCK=2**{block.bit_length() - 1}", "big-add", str(block)) for block in BIG_ADD_BLOCKS]
    found += [(f"attn_res MAX_BLOCKS={n}", "attn-res", str(n)) for n in ATTN_RES_MAX_BLOCKS]
    return [c for c in found if selected is None or c[0] in selected]


def run_case(tiles_root: Path, kind: str, what: str, timeout: float) -> dict[str, Any] | str:
    with tempfile.TemporaryDirectory() as tiles_cache, tempfile.TemporaryDirectory() as pocl_cache:
        env = {**os.environ, "TILES_CACHE_DIR": tiles_cache, "TILES_ALWAYS_COMPILE": "1",
               "POCL_CACHE_DIR": pocl_cache, "TILES_BACKEND": "opencl"}
        script = CHILD.format(tiles_root=str(tiles_root), compat=str(ROOT / "tests" / "compat"),
                              benchmarks=str(ROOT / "benchmarks"), kind=kind,
                              what=what, add_example=str(EXAMPLES["vector_add"]),
                              attn_res=str(ROOT / "tests" / "compat" / "kernels" / "liger/attn_res.py"))
        try:
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                  env=env, timeout=timeout, cwd=tempfile.gettempdir())
        except subprocess.TimeoutExpired:
            return f"> {timeout:.0f} s"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        return "failed: " + lines[-1][:120]
    return json.loads(done.stdout.strip().splitlines()[-1])


def export(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tiles"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def per_kernel(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel name: its configurations (compiles), the largest OpenCL C (lines), and
    the seconds per configuration (C generation + pocl build + first launch; mean and worst)."""
    rows: dict[str, dict[str, Any]] = {}
    for k in result.get("kernels", []):
        seconds = k["c"] + k["build"] + k["launch"]
        row = rows.setdefault(k["name"], {"kernel": k["name"], "configs": 0, "lines": 0, "total": 0.0, "worst": 0.0})
        row["configs"] += 1
        row["lines"] = max(row["lines"], k["lines"])
        row["total"] += seconds
        row["worst"] = max(row["worst"], seconds)
    return list(rows.values())


def describe(result: dict[str, Any] | str) -> str:
    if isinstance(result, str):
        return result
    worst = max(per_kernel(result), key=lambda r: r["worst"], default=None)
    slowest = "" if worst is None else (f"; slowest {worst['kernel']}: {worst['configs']} config(s), "
                                        f"{worst['lines']} lines, {worst['total'] / worst['configs']:.1f} s/config, "
                                        f"worst {worst['worst']:.1f} s")
    return (f"{result['wall']:7.1f} s (trace {result.get('trace', 0):.1f}, C {result.get('stage_opencl', 0):.1f}"
            f" s/{result['c_bytes'] / 1024:.0f} KiB, build {result.get('stage_build', 0):.1f}, "
            f"launches {result.get('launches', 0):.1f}{slowest})")


def summary(records: list[dict[str, Any]], label: str, top: int) -> None:
    """The ``top`` slowest kernels by worst seconds for one configuration, then the failures."""
    rows = []
    for rec in records:
        if rec["label"] != label:
            continue
        if isinstance(rec["result"], str):
            rows.append((float("inf"), rec["case"], rec["result"], "", "", "", ""))
            continue
        for r in per_kernel(rec["result"]):
            rows.append((r["worst"], rec["case"], r["kernel"], r["lines"], r["configs"],
                         f"{r['total'] / r['configs']:.1f}", f"{r['worst']:.1f}"))
    rows.sort(key=lambda r: -r[0])
    cases_run = len({rec["case"] for rec in records if rec["label"] == label})
    print(f"\n{label}: {cases_run} cases, {len(rows)} kernels; slowest {top} by worst seconds per configuration")
    print("| case | kernel | OpenCL C lines | configurations | s per configuration | worst s |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows[:top]:
        print("| " + " | ".join(str(x) for x in row[1:]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="git commit whose tiles runs beside this one")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--chunk", help="I/N: run only the I-th of N equal slices of the cases (1-based)")
    parser.add_argument("--out", help="JSON-lines file each case's result is appended to; cases already in it "
                                      "are skipped (resume), and the summary covers all of it")
    parser.add_argument("--summary", action="store_true", help="print the summary of --out and stop")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per case and tiles")
    args = parser.parse_args()
    out = Path(args.out) if args.out else None
    records = [json.loads(line) for line in out.read_text().splitlines()] if out and out.exists() else []
    labels = (["before", "after"] if args.before else ["after"])
    if args.summary:
        for label in sorted({rec["label"] for rec in records}):
            summary(records, label, args.top)
        return
    import pyopencl as cl

    sys.path.insert(0, str(ROOT))
    from tiles.backends.opencl import runtime
    device = runtime.device()[2]
    print(f"device: {device.platform.name} {device.platform.version} / {device.name}", flush=True)
    selected = set(args.cases.split(",")) if args.cases else None
    todo = cases(selected)
    if args.chunk:
        i, n = (int(x) for x in args.chunk.split("/"))
        todo = todo[i - 1::n]
    done = {(rec["case"], rec["label"]) for rec in records}
    with tempfile.TemporaryDirectory() as peer:
        trees = [("after", ROOT)]
        if args.before:
            trees.insert(0, ("before", export(args.before, Path(peer))))
        for name, kind, what in todo:
            for label, tree in trees:
                if (name, label) in done:
                    continue
                result = run_case(tree, kind, what, args.timeout)
                print(f"{name:28s} {label:7s} {describe(result)}", flush=True)
                records.append({"case": name, "label": label, "result": result})
                if out:
                    with out.open("a") as f:
                        f.write(json.dumps(records[-1]) + "\n")
    for label in labels:
        summary(records, label, args.top)
    del cl


if __name__ == "__main__":
    main()
