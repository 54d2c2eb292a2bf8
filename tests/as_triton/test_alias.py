"""``import triton`` gives tiles in the compatibility mode: the module names kernels and host code
use, Triton's version, its knobs, and the parts it does not serve (checked against Triton 3.9's
module layout in /work/tvenv: ``triton/language/extra/cuda/libdevice.py``,
``triton/runtime/driver.py``, ``triton/compiler/errors.py``, ``triton/knobs.py``...)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys

import numpy as np
import pytest

import tiles
from tiles.as_triton import TRITON_MODULES, TRITON_VERSION, installed


def test_modules_are_tiles(alias):
    import triton
    import triton.language as tl

    assert triton is alias and installed()
    assert tl is tiles.language
    for name, target in TRITON_MODULES.items():
        assert importlib.import_module(name) is importlib.import_module(target), name
    assert sys.modules["tiles.language"].__spec__.name == "tiles.language"  # tiles' own modules untouched


def test_version_is_the_triton_release_tiles_implements(alias):
    import triton

    assert triton.__version__ == TRITON_VERSION
    major, minor = (int(v) for v in triton.__version__.split(".")[:2])
    assert (major, minor) >= (3, 0)  # Unsloth: Version(triton.__version__) >= "3.0.0"
    assert importlib.metadata.version("triton") == TRITON_VERSION
    assert tiles.__version__ != triton.__version__  # tiles keeps its own (cache keys)


def test_names_used_in_the_wild(alias):
    import triton
    import triton.runtime.driver  # a module import must not replace ``runtime.driver`` (the object)
    from triton import Config, autotune, cdiv, heuristics, jit, next_power_of_2  # noqa: F401
    from triton.compiler import CompiledKernel  # noqa: F401
    from triton.compiler.errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401
    from triton.language.extra import libdevice
    from triton.language.extra.cuda import libdevice as cuda_libdevice
    from triton.language.extra.cuda.libdevice import rsqrt as cuda_rsqrt
    from triton.language.extra.hip.libdevice import rsqrt as hip_rsqrt
    from triton.language.extra.libdevice import rsqrt
    from triton.language.math import rsqrt as math_rsqrt
    from triton.runtime import driver
    from triton.runtime.autotuner import Autotuner, OutOfResources  # noqa: F401
    from triton.runtime.jit import JITFunction, KernelInterface  # noqa: F401
    from triton.testing import assert_close, do_bench, get_dram_gbps, nvsmi  # noqa: F401
    from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401

    assert triton.runtime.driver is driver and hasattr(driver.active, "get_current_target")
    assert rsqrt is libdevice.rsqrt and cuda_rsqrt is cuda_libdevice.rsqrt
    assert callable(hip_rsqrt) and callable(math_rsqrt)
    assert triton.cdiv(10, 4) == 3 and triton.language.constexpr is tiles.language.constexpr


def test_parts_tiles_does_not_serve_are_not_found(alias):
    for name in ("triton.backends", "triton.backends.compiler", "triton._C", "triton.runtime.cache"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)
    import triton
    with pytest.raises(AttributeError, match="compatibility mode"):
        triton.no_such_name  # noqa: B018


def test_knobs(alias, monkeypatch):
    from triton import knobs

    monkeypatch.delenv("TILES_INTERPRET", raising=False)
    assert knobs.runtime.interpret is False
    with knobs.runtime.scope():
        knobs.runtime.interpret = True
        assert os.environ["TILES_INTERPRET"] == "1" and tiles.config.interpret()
        knobs.runtime.launch_enter_hook = print  # kept, no effect
        assert knobs.runtime.launch_enter_hook is print
    assert "TILES_INTERPRET" not in os.environ and knobs.runtime.launch_enter_hook is None
    knobs.cache.dir = "/tmp/somewhere"
    assert str(tiles.config.cache_dir()) == "/tmp/somewhere" == knobs.cache.dir
    del knobs.cache.dir
    with pytest.raises(AttributeError, match="no knob"):
        knobs.runtime.no_such_knob  # noqa: B018


def test_knob_groups_swap_as_triton_test_fixtures_do(alias, monkeypatch):
    """Triton's ``fresh_knobs`` fixture: find the groups by ``knobs.base_knobs``, put a reset copy
    of each in place for the test, and put the originals back after."""
    from triton import knobs

    monkeypatch.setenv("TILES_INTERPRET", "1")
    knobs.compilation.dump_ir = True
    groups = {name: g for name, g in vars(knobs).items() if isinstance(g, knobs.base_knobs) and g != knobs.base_knobs}
    assert {"runtime", "compilation", "language", "nvidia"} <= set(groups)
    try:
        for name, group in groups.items():
            fresh = group.copy().reset()
            assert fresh is not group and not fresh.knob_descriptors
            setattr(knobs, name, fresh)
        assert knobs.compilation.dump_ir is False and groups["compilation"].dump_ir is True
        knobs.runtime.override_arch = "sm90"
        assert groups["runtime"].override_arch is None
        assert knobs.runtime.interpret is True and knobs.propagate_env  # the environment stays
    finally:
        for name, group in groups.items():
            setattr(knobs, name, group)
        knobs.compilation.dump_ir = False
    assert knobs.compilation.dump_ir is False and knobs.runtime.override_arch is None


def test_triton_interpret_means_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("TILES_INTERPRET", raising=False)
    tiles.install_as_triton()
    try:
        assert os.environ.get("TILES_INTERPRET") == "1"
    finally:
        tiles.uninstall_as_triton()
        os.environ.pop("TILES_INTERPRET", None)


def test_uninstall_leaves_no_triton():
    tiles.install_as_triton()
    tiles.uninstall_as_triton()
    assert not installed() and "triton.language" not in sys.modules
    if importlib.util.find_spec("triton") is None:  # (no real Triton here)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("triton")


def test_triton_written_kernels_run(alias):
    """Tutorial-style host code and kernels through ``import triton``, against NumPy."""
    sys.modules.pop("triton_user_kernels", None)
    user = importlib.import_module("triton_user_kernels")
    rng = np.random.default_rng(32)
    x = rng.normal(0, 3, (37, 100)).astype(np.float32)
    x[3, 5] = np.inf * 0  # a NaN row stays NaN
    expected = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(user.softmax(x), expected / expected.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    v = rng.normal(0, 2, 1000).astype(np.float32)
    v[:3] = [0.0, -0.0, 1e-30]
    np.testing.assert_allclose(user.rms_scale(v), v / np.sqrt(v * v + np.float32(1e-6)), rtol=1e-6)
    m = rng.normal(0, 1, (21, 40)).astype(np.float32)
    np.testing.assert_array_equal(user.tile_double(m), m * 2)


def test_a_real_triton_imported_before_is_shadowed_then_restored(monkeypatch):
    """Stands in a module for a real Triton (the same names in sys.modules) to check the swap."""
    import types

    real = types.ModuleType("triton")
    real_language = types.ModuleType("triton.language")
    monkeypatch.setitem(sys.modules, "triton", real)
    monkeypatch.setitem(sys.modules, "triton.language", real_language)
    tiles.install_as_triton()
    try:
        import triton
        import triton.language as tl
        assert triton is not real and tl is tiles.language
    finally:
        tiles.uninstall_as_triton()
    assert sys.modules["triton"] is real and sys.modules["triton.language"] is real_language


def test_allocator_fixture_of_triton_tests(alias):
    """Triton's test fixture ``with_allocator``: set an allocator, run, put ``NullAllocator()`` back."""
    import triton
    import triton.language as tl
    from triton.runtime._allocation import NullAllocator

    @triton.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = np.random.default_rng(3).standard_normal(37).astype(np.float32)
    out = np.zeros_like(x)
    triton.set_allocator(lambda size, align, stream: np.empty(size, np.int8))
    try:
        double[(1,)](x, out, x.size, BLOCK=64)
    finally:
        triton.set_allocator(NullAllocator())
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(RuntimeError, match="no allocator is set"):
        NullAllocator()(64, 16, None)
