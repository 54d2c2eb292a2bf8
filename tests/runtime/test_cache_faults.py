"""The disk cache under faults: a writer killed mid-write, an unwritable folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import rt_kernels as kernels

import tiles
from tiles.runtime import cache

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
ROOT = Path(__file__).resolve().parents[2]

# A child that writes entry ``path`` with ``payload`` and stops inside the write (after the bytes
# reach the temporary file, before it replaces the entry) until it is killed.
STOPPED_WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from tiles.runtime import cache

    def stop(src, dst):
        Path({ready!r}).write_text("stopped")
        time.sleep(60)
    os.replace = stop
    cache.write_entry(Path({path!r}), b"new entry " * 100_000)
""")

# A child that rewrites the entry forever with payloads of varying sizes.
BUSY_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from tiles.runtime import cache
    Path({ready!r}).write_text("started")
    i = 0
    while True:
        i += 1
        cache.write_entry(Path({path!r}), (b"%d:" % i) * (1000 + 97 * (i % 500)))
""")


def _start(script: str, ready: Path) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None, "the writer exited early"
        assert time.monotonic() < deadline, "the writer never got going"
        time.sleep(0.01)
    return child


def _kill(child: subprocess.Popen[bytes]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize("had_entry", [False, True])
def test_writer_killed_mid_write_leaves_the_old_entry_or_none(tmp_path, had_entry):
    path = tmp_path / "kernels" / "ab" / "entry.json"
    old = b"old entry " * 1000
    if had_entry:
        assert cache.write_entry(path, old)
    ready = tmp_path / "ready"
    child = _start(STOPPED_WRITER.format(root=str(ROOT), ready=str(ready), path=str(path)), ready)
    leftovers = [p for p in path.parent.iterdir() if p.suffix == ".tmp"]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # the new bytes were on disk
    _kill(child)
    assert cache.read_entry(path) == (old if had_entry else None)


def test_writers_killed_at_random_moments_never_leave_a_corrupt_entry(tmp_path):
    rng = np.random.default_rng(40)
    path = tmp_path / "kernels" / "cd" / "entry.json"
    for round_ in range(4):
        ready = tmp_path / f"ready{round_}"
        child = _start(BUSY_WRITER.format(root=str(ROOT), ready=str(ready), path=str(path)), ready)
        time.sleep(float(rng.uniform(0.02, 0.3)))
        _kill(child)
        payload = cache.read_entry(path)
        if path.exists():
            assert payload is not None, f"round {round_}: a corrupt entry would be served"
            count = payload.split(b":")[0]
            assert payload == (count + b":") * (1000 + 97 * (int(count) % 500))


def test_a_corrupt_entry_from_a_killed_writer_is_rebuilt(private_cache_dir):
    kernels.CachingBackend.compiles = kernels.CachingBackend.loads = 0
    tiles.jit(kernels.add_kernel.fn).compile(SIGNATURE, {"BLOCK": 32}, backend=kernels.CachingBackend())
    [entry] = list((private_cache_dir / "kernels").rglob("*" + cache.KERNEL_SUFFIX))
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])  # what a non-atomic writer killed halfway would leave
    kernels.CachingBackend.compiles = 0
    again = tiles.jit(kernels.add_kernel.fn)
    with pytest.warns(cache.CacheWarning, match="damaged"):
        again.compile(SIGNATURE, {"BLOCK": 32}, backend=kernels.CachingBackend())
    assert kernels.CachingBackend.compiles == 1
    assert cache.read_entry(entry) is not None
    x = np.random.default_rng(41).standard_normal(40).astype(np.float32)
    y, out = np.ones(40, np.float32), np.zeros(40, np.float32)
    again[(2,)](x, y, out, 40, BLOCK=32, backend=kernels.CachingBackend())
    np.testing.assert_allclose(out, 2 * x + 1, rtol=1e-6)


def test_unwritable_cache_folder_warns_once_and_memory_caching_goes_on(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TILES_CACHE_DIR", str(blocker / "cache"))
    kernels.CachingBackend.compiles = 0
    backend = kernels.CachingBackend()
    kernel = tiles.jit(kernels.add_kernel.fn)
    x = np.random.default_rng(42).standard_normal(50).astype(np.float32)
    y, out = np.ones(50, np.float32), np.zeros(50, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in (16, 32, 16, 32):
            out[:] = 0
            kernel[(tiles.cdiv(50, block),)](x, y, out, 50, BLOCK=block, backend=backend)
            np.testing.assert_allclose(out, 2 * x + 1, rtol=1e-6)
    messages = [str(w.message) for w in caught if issubclass(w.category, cache.CacheWarning)]
    assert len(messages) == 1, messages
    assert "cannot write its compile cache" in messages[0] and "TILES_CACHE_DIR" in messages[0]
    assert kernels.CachingBackend.compiles == 2  # one per BLOCK: the memory cache served the repeats


def test_a_killed_writers_leftover_is_removed_once_stale(tmp_path):
    path = tmp_path / "kernels" / "ef" / "entry.json"
    path.parent.mkdir(parents=True)
    stale, live = path.parent / f".{path.name}.dead.tmp", path.parent / f".{path.name}.live.tmp"
    stale.write_bytes(b"half an entry")
    live.write_bytes(b"being written")
    old = time.time() - cache.STALE_TEMP_SECONDS - 5
    os.utime(stale, (old, old))
    assert cache.write_entry(path, b"payload")
    assert not stale.exists() and live.exists()
    assert cache.read_entry(path) == b"payload"
