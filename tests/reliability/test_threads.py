"""Many threads tracing, compiling and launching at once, on every backend present.

Each round wraps the kernel functions in fresh ``tiles.jit`` objects, so every
thread's first launch races the others through tracing, compiling and the caches;
then each thread keeps launching (steady state).  The interpreter's thread switch
interval is cut to 10 µs so races show up in a few seconds.  Every result is
compared with NumPy; a failure names the backend, kernel, thread and seed.
"""

from __future__ import annotations

import sys
import threading
import traceback

import numpy as np
import pytest

import tiles
from tiles.backends import registry

from . import thread_kernels as K

THREADS = 6
ROUNDS = 2
STEADY_LAUNCHES = 4


def _backend(name: str):
    ok, why = registry.status(name)
    return pytest.param(name, marks=pytest.mark.skipif(not ok, reason=f"{name} backend unavailable: {why}"))


BACKENDS = [_backend("interpreter"), _backend("opencl"), _backend("cuda")]


@pytest.fixture
def short_switch_interval():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _scaled_add(kernels, rng, dtype, block, backend):
    n = int(rng.integers(1, 3 * block))
    x = rng.standard_normal(n).astype(dtype) if dtype == np.float32 else rng.integers(-99, 99, n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype) if dtype == np.float32 else rng.integers(-99, 99, n).astype(dtype)
    alpha = 3 if dtype == np.int32 else 0.5
    out = np.zeros(n, dtype)
    kernels["scaled_add"][(tiles.cdiv(n, block),)](x, y, out, n, alpha, BLOCK=block, backend=backend)
    expected = x * dtype(alpha) + y
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def _row_sums(kernels, rng, dtype, block, backend):
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 3 * block))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros(rows, np.float32)
    kernels["row_sums"][(rows,)](x, out, cols, x.shape[1], BLOCK=block, backend=backend)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)


def _clamp_or_negate(kernels, rng, dtype, block, backend):
    n = int(rng.integers(1, 3 * block))
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    limit = float(rng.choice([-1.0, 1.5]))
    out = np.zeros(n, np.float32)
    kernels["clamp_or_negate"][(tiles.cdiv(n, block),)](x, out, n, limit, BLOCK=block, backend=backend)
    expected = np.clip(x, -limit, limit) if limit > 0 else -x
    np.testing.assert_array_equal(out, expected)


# (check, dtype, BLOCK): three kernels, two specializations each
CASES = [(_scaled_add, np.float32, 32), (_scaled_add, np.int32, 64), (_row_sums, np.float32, 16),
         (_row_sums, np.float32, 32), (_clamp_or_negate, np.float32, 32), (_clamp_or_negate, np.float32, 64)]


def _fresh_kernels():
    return {name: tiles.jit(getattr(K, name)) for name in ("scaled_add", "row_sums", "clamp_or_negate")}


def _hammer(backend: str, base_seed: int, threads: int, rounds: int, steady: int) -> list[str]:
    """Run the cases from ``threads`` threads; returns one line per failure.

    Every launch names its backend (the default backend may be per thread)."""
    failures: list[str] = []
    lock = threading.Lock()
    for r in range(rounds):
        kernels = _fresh_kernels()
        start = threading.Barrier(threads)

        def worker(t: int, kernels=kernels, start=start, r=r) -> None:
            seed = base_seed + 1000 * r + t
            rng = np.random.default_rng(seed)
            order = [CASES[(t + i) % len(CASES)] for i in range(len(CASES))]
            start.wait()
            for launch in range(1 + steady):
                for check, dtype, block in order:
                    try:
                        check(kernels, rng, dtype, block, backend)
                    except Exception as e:  # noqa: BLE001 - reported with its case below
                        with lock:
                            failures.append(
                                f"{backend} round {r} thread {t} seed {seed} launch {launch} "
                                f"{check.__name__[1:]}[{np.dtype(dtype).name}, BLOCK={block}]: "
                                f"{type(e).__name__}: {str(e)[:300]}\n"
                                + "".join(traceback.format_exception(e)[-3:]))
        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    return failures


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_first_and_steady_launches(backend, short_switch_interval):
    failures = _hammer(backend, base_seed=20261201, threads=THREADS, rounds=ROUNDS, steady=STEADY_LAUNCHES)
    assert not failures, f"{len(failures)} failed launches; first ones:\n" + "\n".join(failures[:3])


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_kernel_alone_matches_numpy(backend):
    """The single-threaded baseline: if this fails, the threaded test's failures are not races."""
    failures = _hammer(backend, base_seed=7, threads=1, rounds=1, steady=0)
    assert not failures, "\n".join(failures)


def test_each_thread_traces_into_its_own_builder():
    """Deterministic: a thread inside tracing() never sees another thread's builder."""
    from tiles.core.builder import Builder, current, is_tracing, tracing

    inside, release = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def other() -> None:
        with tracing(Builder()) as mine:
            inside.set()
            release.wait(5)
            seen["other"] = current() is mine

    th = threading.Thread(target=other)
    th.start()
    assert inside.wait(5)
    seen["main_tracing"] = is_tracing()  # the other thread is tracing; this one is not
    with tracing(Builder()) as main_builder:
        seen["main"] = current() is main_builder
        release.set()
        th.join()
    assert seen == {"main_tracing": False, "main": True, "other": True}
