"""Warm starts: a new process launches a kernel from the disk cache without tracing or compiling.

Each case runs the same small program in two fresh processes sharing one TILES_CACHE_DIR; the
program launches a kernel (which calls a @jit helper and reads a constexpr global) on seeded
random data, checks it against NumPy and prints ``tiles.runtime.cache.STATS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tiles.backends import registry
from tiles.runtime import cache

ROOT = Path(__file__).resolve().parents[2]

KERNELS = textwrap.dedent("""
    import tiles
    import tiles.language as tl

    OFFSET = tl.constexpr({offset})


    @tiles.jit
    def scaled(x):
        return x * {scale}


    @tiles.jit
    def axpb_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, scaled(x) + y + OFFSET, mask=mask)
""")

PROGRAM = textwrap.dedent("""
    import json, sys, warnings
    sys.path[:0] = [{root!r}, {folder!r}]
    import numpy as np
    import tiles
    from tiles.runtime import cache
    from tiles.backends.opencl import runtime as cl_runtime

    calls = {{"source_builds": 0, "binary_builds": 0}}
    if {force_binaries}:
        cl_runtime.keeps_binaries = lambda: True
    for name, counter in (("build", "source_builds"), ("build_from_binary", "binary_builds")):
        def counted(*args, _inner=getattr(cl_runtime, name), _counter=counter):
            calls[_counter] += 1
            return _inner(*args)
        setattr(cl_runtime, name, counted)

    import warm_kernels
    rng = np.random.default_rng({seed})
    n = 1003
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warm_kernels.axpb_kernel[(tiles.cdiv(n, 128),)](x, y, out, n, BLOCK=128, backend={backend!r})
    expected = x * {scale} + y + {offset}
    print(json.dumps({{"stats": dict(cache.STATS), "calls": calls,
                      "max_error": float(np.max(np.abs(out - expected))),
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, cache.CacheWarning)]}}))
""")


def backend_or_skip(name: str) -> None:
    ok, why = registry.status(name)
    if not ok:
        pytest.skip(f"the {name} backend is not available here: {why}")


def run_program(folder: Path, cache_dir: Path, backend: str, *, scale: int = 3, offset: int = 1,
                seed: int = 0, force_binaries: bool = False, always_compile: bool = False) -> dict:
    (folder / "warm_kernels.py").write_text(KERNELS.format(scale=scale, offset=offset))
    script = PROGRAM.format(root=str(ROOT), folder=str(folder), backend=backend, scale=scale,
                            offset=offset, seed=seed, force_binaries=force_binaries)
    env = {**os.environ, "TILES_CACHE_DIR": str(cache_dir)}
    env.pop("TILES_ALWAYS_COMPILE", None)
    if always_compile:
        env["TILES_ALWAYS_COMPILE"] = "1"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["max_error"] <= 1e-5, result
    return result


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "kernels").rglob("*" + cache.KERNEL_SUFFIX))


BACKENDS = [pytest.param("interpreter"),
            pytest.param("opencl", marks=pytest.mark.slow),
            pytest.param("cuda", marks=pytest.mark.slow)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_new_process_launches_the_cached_kernel_without_compiling(tmp_path, backend):
    backend_or_skip(backend)
    cold = run_program(tmp_path, tmp_path / "cache", backend, seed=1)
    assert cold["stats"] == {"misses": 1, "traces": 1, "stores": 1}, cold
    warm = run_program(tmp_path, tmp_path / "cache", backend, seed=2)
    assert warm["stats"] == {"hits": 1}, warm  # no trace, no lowering, no backend compile
    assert len(entries(tmp_path / "cache")) == 1
    if backend == "opencl":
        assert warm["calls"]["source_builds"] + warm["calls"]["binary_builds"] == 1


@pytest.mark.slow
def test_opencl_warm_start_from_the_program_binary(tmp_path):
    backend_or_skip("opencl")
    cold = run_program(tmp_path, tmp_path / "cache", "opencl", seed=3, force_binaries=True)
    assert cold["calls"] == {"source_builds": 1, "binary_builds": 0}, cold
    warm = run_program(tmp_path, tmp_path / "cache", "opencl", seed=4, force_binaries=True)
    assert warm["stats"] == {"hits": 1}
    assert warm["calls"] == {"source_builds": 0, "binary_builds": 1}, warm


@pytest.mark.parametrize("change", ["helper source", "constexpr global"])
def test_a_change_the_kernel_depends_on_is_compiled_afresh(tmp_path, change):
    run_program(tmp_path, tmp_path / "cache", "interpreter")
    changed = {"scale": 5} if change == "helper source" else {"offset": 7}
    result = run_program(tmp_path, tmp_path / "cache", "interpreter", **changed)  # checks 5x / +7
    assert result["stats"] == {"misses": 1, "traces": 1, "stores": 1}, result
    assert len(entries(tmp_path / "cache")) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip_byte", "garbage"])
def test_a_damaged_entry_is_reported_and_recompiled_in_the_next_process(tmp_path, damage):
    run_program(tmp_path, tmp_path / "cache", "interpreter")
    [entry] = entries(tmp_path / "cache")
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) * 2 // 3]
    elif damage == "flip_byte":
        data[-40] ^= 0x10
    else:
        data = bytearray(os.urandom(len(data)))
    entry.write_bytes(bytes(data))
    result = run_program(tmp_path, tmp_path / "cache", "interpreter", seed=5)
    assert result["stats"] == {"misses": 1, "traces": 1, "stores": 1}, result
    assert len(result["warnings"]) == 1 and "damaged compile-cache entry" in result["warnings"][0]
    assert cache.read_entry(entry) is not None  # replaced by a whole entry
    again = run_program(tmp_path, tmp_path / "cache", "interpreter", seed=6)
    assert again["stats"] == {"hits": 1} and again["warnings"] == []


def test_always_compile_neither_reads_nor_writes(tmp_path):
    result = run_program(tmp_path, tmp_path / "cache", "interpreter", always_compile=True)
    assert result["stats"] == {"traces": 1}
    assert entries(tmp_path / "cache") == []
