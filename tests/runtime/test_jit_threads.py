"""jit/compile/cache state under threads: one compile per key, nothing broken cached, per-target keys."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Target
from tiles.backends.interpreter import InterpreterBackend


class CountingBackend(InterpreterBackend):
    """The interpreter, counting compiles; slow to compile (so threads overlap) and able to fail once."""

    name = "counting-interpreter"

    def __init__(self, arch: str = "numpy", fail_first: bool = False) -> None:
        self.arch = arch
        self.fail_next = fail_first
        self.compiles = 0
        self.lock = threading.Lock()

    def target(self) -> Target:
        return Target(self.name, self.arch, warp_size=1)

    def compile(self, kernel, options):
        with self.lock:
            self.compiles += 1
            failing, self.fail_next = self.fail_next, False
        time.sleep(0.05)
        if failing:
            raise RuntimeError("simulated toolchain crash")
        return super().compile(kernel, options)


def fresh_kernel():
    @tiles.jit
    def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)
    return axpy


@pytest.fixture
def short_switch_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def run_threads(count, target):
    errors = []
    barrier = threading.Barrier(count)

    def body(i):
        try:
            barrier.wait()
            target(i)
        except Exception as e:  # collected and asserted below
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_first_launches_compile_once(short_switch_interval):
    kernel, backend = fresh_kernel(), CountingBackend()
    rng = np.random.default_rng(30)
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    outs = [np.zeros(300, np.float32) for _ in range(8)]
    errors = run_threads(8, lambda i: kernel[(3,)](x, y, outs[i], 2.5, 300, BLOCK=128, backend=backend))
    assert not errors, errors
    assert backend.compiles == 1
    for out in outs:
        np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)


def test_steady_launches_from_many_threads(short_switch_interval):
    kernel, backend = fresh_kernel(), CountingBackend()
    rng = np.random.default_rng(31)
    xs = [rng.standard_normal(97).astype(np.float32) for _ in range(6)]
    y = rng.standard_normal(97).astype(np.float32)
    outs = [np.zeros(97, np.float32) for _ in range(6)]
    kernel[(1,)](xs[0], y, outs[0], 1.0, 97, BLOCK=128, backend=backend)

    def many(i):
        for step in range(20):
            kernel[(1,)](xs[i], y, outs[i], float(step), 97, BLOCK=128, backend=backend)
            np.testing.assert_allclose(outs[i], np.float32(step) * xs[i] + y, rtol=1e-6)
    errors = run_threads(6, many)
    assert not errors, errors
    assert backend.compiles == 1


def test_a_failed_compile_is_not_cached(short_switch_interval):
    kernel, backend = fresh_kernel(), CountingBackend(fail_first=True)
    rng = np.random.default_rng(32)
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    outs = [np.zeros(64, np.float32) for _ in range(4)]
    errors = run_threads(4, lambda i: kernel[(1,)](x, y, outs[i], -1.5, 64, BLOCK=64, backend=backend))
    assert len(errors) == 1 and "simulated toolchain crash" in str(errors[0])  # the one that compiled first
    assert backend.compiles == 2  # the next waiting thread compiled again instead of reusing a failure
    out = np.zeros(64, np.float32)
    kernel[(1,)](x, y, out, -1.5, 64, BLOCK=64, backend=backend)
    assert backend.compiles == 2
    np.testing.assert_allclose(out, np.float32(-1.5) * x + y, rtol=1e-6)


def test_the_target_is_part_of_the_in_memory_key():
    kernel, backend = fresh_kernel(), CountingBackend("gfx90a")
    rng = np.random.default_rng(33)
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    first = kernel[(1,)](x, y, out, 1.0, 16, BLOCK=16, backend=backend)
    backend.arch = "gfx942"
    second = kernel[(1,)](x, y, out, 1.0, 16, BLOCK=16, backend=backend)
    assert backend.compiles == 2 and first is not second
    backend.arch = "gfx90a"
    assert kernel[(1,)](x, y, out, 1.0, 16, BLOCK=16, backend=backend) is first
    assert kernel.warmup(x, y, out, 1.0, 16, BLOCK=16, backend=backend) is first
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_rocm_keys_follow_the_architecture(monkeypatch):
    from tiles.backends import registry
    rocm = registry.get("rocm")
    if rocm.available()[0]:
        pytest.skip("a ROCm device fixes the architecture")
    from tiles.backends.base import Options
    from tiles.runtime.cache import compile_key
    kernel = fresh_kernel()
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32", "n": "i32"}
    specs = kernel.specs_from_signature(signature, {"BLOCK": 64})
    keys = {}
    for arch in ("gfx90a", "gfx942"):
        monkeypatch.setenv("TILES_ROCM_ARCH", arch)
        keys[arch] = (rocm.target_key(), compile_key(kernel, specs, rocm, Options()))
    assert keys["gfx90a"][0] == ("gfx90a", 0) and keys["gfx942"][0] == ("gfx942", 0)
    assert keys["gfx90a"][1] != keys["gfx942"][1]  # the disk key too


def test_rocm_compiles_each_architecture_to_its_own_code(monkeypatch):
    from tiles.backends import registry
    rocm = registry.get("rocm")
    if rocm.available()[0]:
        pytest.skip("a ROCm device fixes the architecture")
    kernel = fresh_kernel()
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32", "n": "i32"}
    code = {}
    for arch in ("gfx90a", "gfx942"):
        monkeypatch.setenv("TILES_ROCM_ARCH", arch)
        try:
            compiled = kernel.compile(signature, {"BLOCK": 64}, backend="rocm")
        except tiles.TilesError as e:
            pytest.skip(f"the ROCm toolchain cannot compile here: {e}")
        code[arch] = compiled
        assert compiled.metadata["arch"] == arch
    assert code["gfx90a"] is not code["gfx942"]
