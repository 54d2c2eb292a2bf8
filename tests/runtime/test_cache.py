"""The on-disk compile cache: hits, keys, bypass, corrupted entries, concurrent writers."""

from __future__ import annotations

import importlib
import multiprocessing
import sys
import textwrap

import numpy as np
import pytest
import rt_kernels as kernels

import tiles
import tiles.language as tl
from tiles.backends.base import Backend, Options
from tiles.backends.interpreter import InterpreterBackend
from tiles.core.errors import KernelRuntimeError
from tiles.runtime import cache

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@pytest.fixture
def backend():
    kernels.CachingBackend.compiles = kernels.CachingBackend.loads = 0
    return kernels.CachingBackend()


def fresh_add_kernel():
    """The same kernel with empty in-memory caches: only the disk can serve it."""
    return tiles.jit(kernels.add_kernel.fn)


def compile_add(backend, block=64, **options):
    return fresh_add_kernel().compile(SIGNATURE, {"BLOCK": block}, backend=backend, **options)


def only_entry(cache_dir):
    entries = list((cache_dir / "kernels").rglob("*" + cache.KERNEL_SUFFIX))
    assert len(entries) == 1, entries
    return entries[0]


def test_second_compile_is_served_from_disk(backend, private_cache_dir):
    first = compile_add(backend)
    second = compile_add(backend)
    assert (backend.compiles, backend.loads) == (1, 1)
    assert second.asm["fake_asm"] == first.asm["fake_asm"]
    assert isinstance(second.asm["fake_asm"], bytes)
    assert second.shared == 16 and second.metadata == first.metadata
    only_entry(private_cache_dir)


def test_cached_kernel_launches_correctly(backend):
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    for _ in range(2):
        out = np.zeros_like(x)
        fresh_add_kernel()[(2,)](x, y, out, 100, BLOCK=64, backend=backend)
        np.testing.assert_array_equal(out, 2 * x + 1)
    assert (backend.compiles, backend.loads) == (1, 1)


def test_key_covers_constexprs_options_and_backend(backend):
    compile_add(backend, 64)
    compile_add(backend, 128)
    compile_add(backend, 64, num_warps=8)
    assert (backend.compiles, backend.loads) == (3, 0)
    specs = kernels.add_kernel.specs_from_signature(SIGNATURE, {"BLOCK": 64})
    key = cache.compile_key(kernels.add_kernel, specs, backend, Options())
    assert key == cache.compile_key(kernels.add_kernel, specs, backend, Options())
    assert key != cache.compile_key(kernels.add_kernel, specs, backend, Options(debug=True))


def test_always_compile_bypasses_the_cache(backend, monkeypatch):
    compile_add(backend)
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    compile_add(backend)
    assert (backend.compiles, backend.loads) == (2, 0)


class UncachedBackend(InterpreterBackend):
    name = "uncached-test"
    load_cached = Backend.load_cached  # the default: not cacheable


def test_uncacheable_backend_writes_nothing(private_cache_dir):
    fresh_add_kernel().compile(SIGNATURE, {"BLOCK": 64}, backend=UncachedBackend())
    assert not (private_cache_dir / "kernels").exists()


def test_called_jit_functions_are_found():
    assert kernels.double in cache.called_jit_functions(kernels.add_kernel.fn)
    assert cache.called_jit_functions(kernels.double.fn) == []


def test_fingerprint_follows_the_source_of_called_helpers(tmp_path, monkeypatch):
    package = tmp_path / "fp_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    kernel_src = textwrap.dedent("""
        import tiles
        import tiles.language as tl
        from . import helpers

        @tiles.jit
        def kern(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, helpers.f(tl.load(x_ptr + offs)))
    """)
    (package / "kern.py").write_text(kernel_src)
    helper = "import tiles\n\n@tiles.jit\ndef f(x):\n    return x + {}\n"
    (package / "helpers.py").write_text(helper.format(1))
    monkeypatch.syspath_prepend(str(tmp_path))
    kern_module = importlib.import_module("fp_pkg.kern")
    before = cache.source_fingerprint(kern_module.kern)
    (package / "helpers.py").write_text(helper.format(2))
    importlib.reload(sys.modules["fp_pkg.helpers"])
    importlib.reload(kern_module)
    after = cache.source_fingerprint(kern_module.kern)
    assert before != after
    for name in ("fp_pkg", "fp_pkg.kern", "fp_pkg.helpers"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "empty", "garbage_header"])
def test_damaged_entry_is_rebuilt_not_loaded(backend, private_cache_dir, damage):
    compile_add(backend)
    path = only_entry(private_cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip_byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"not a cache entry\n") + data
    path.write_bytes(bytes(data))
    with pytest.warns(cache.CacheWarning, match="damaged compile-cache entry"):
        rebuilt = compile_add(backend)
    assert (backend.compiles, backend.loads) == (2, 0)
    assert rebuilt.asm["fake_asm"].endswith(b"\x00\xff")
    assert cache.read_entry(path) is not None  # repaired in place
    compile_add(backend)
    assert backend.loads == 1


def _write_many(path: str, writer: int, rounds: int) -> None:
    from pathlib import Path
    for i in range(rounds):
        payload = (f"{writer}:{i}:".encode()) * 50_000  # ~400 kB: wide windows for tearing
        assert cache.write_entry(Path(path), payload)


def _read_many(path: str, rounds: int, queue) -> None:
    from pathlib import Path
    seen_valid = 0
    for _ in range(rounds):
        target = Path(path)
        if not target.exists():
            continue
        payload = cache.read_entry(target)
        if payload is None:
            queue.put("torn read")
            return
        writer, i = payload[:20].decode().split(":")[:2]
        if payload != f"{writer}:{i}:".encode() * 50_000:
            queue.put("mixed payload")
            return
        seen_valid += 1
    queue.put(seen_valid)


def test_concurrent_writers_leave_readers_a_whole_entry(tmp_path):
    path = str(tmp_path / "shared" / "entry.json")
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    queue = ctx.Queue()
    writers = [ctx.Process(target=_write_many, args=(path, w, 15)) for w in range(5)]
    readers = [ctx.Process(target=_read_many, args=(path, 300, queue)) for _ in range(2)]
    for p in writers + readers:
        p.start()
    for p in writers + readers:
        p.join(60)
        assert p.exitcode == 0
    results = [queue.get(timeout=10) for _ in readers]
    assert all(isinstance(r, int) for r in results), results
    assert cache.read_entry(tmp_path / "shared" / "entry.json") is not None
    assert not [p for p in (tmp_path / "shared").iterdir() if p.suffix == ".tmp"]


def _compile_in_child(cache_dir: str) -> None:
    import os
    os.environ["TILES_CACHE_DIR"] = cache_dir
    fresh_add_kernel().compile(SIGNATURE, {"BLOCK": 32}, backend=kernels.CachingBackend())


def test_processes_compiling_the_same_kernel_share_one_valid_entry(private_cache_dir):
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    procs = [ctx.Process(target=_compile_in_child, args=(str(private_cache_dir),)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entry = only_entry(private_cache_dir)
    assert cache.read_entry(entry) is not None
    kernels.CachingBackend.compiles = kernels.CachingBackend.loads = 0
    fresh_add_kernel().compile(SIGNATURE, {"BLOCK": 32}, backend=kernels.CachingBackend())
    assert (kernels.CachingBackend.compiles, kernels.CachingBackend.loads) == (0, 1)


@tiles.jit
def shifted_copy(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift, mask=offs < n), mask=offs < n)


def test_checked_mode_plan_comes_back_with_the_cached_kernel(backend, rng):
    """debug=True on a compiled backend instruments the kernel; a disk hit must still check."""
    x = rng.standard_normal(100).astype(np.float32)
    for expected_loads in (0, 1):
        out = np.zeros(100, np.float32)
        fresh = tiles.jit(shifted_copy.fn)
        with pytest.raises(KernelRuntimeError, match="out of bounds of argument 'x_ptr'"):
            fresh[(2,)](x, out, 100, 7, BLOCK=64, debug=True, backend=backend)
        assert backend.loads == expected_loads
        fresh[(2,)](x, out, 93, 7, BLOCK=64, debug=True, backend=backend)
        np.testing.assert_array_equal(out[:93], x[7:])
    assert backend.compiles == 1


def test_cuda_ptx_comes_from_disk_without_a_trace():
    """Compile-only here (PTX for TILES_CUDA_ARCH); tests/runtime/test_cache_warm.py launches on a GPU."""
    first = fresh_add_kernel().compile(SIGNATURE, {"BLOCK": 256}, backend="cuda")
    cache.STATS.clear()
    again = fresh_add_kernel().compile(SIGNATURE, {"BLOCK": 256}, backend="cuda")
    assert dict(cache.STATS) == {"hits": 1}
    assert again.asm["ptx"] == first.asm["ptx"] and again.asm["llir"] == first.asm["llir"]
    assert {k: again.metadata[k] for k in ("threads", "shared")} == {"threads": 128, "shared": 0}
    assert [p.name for p in again.ir.params] == ["x_ptr", "y_ptr", "out_ptr", "n"]
