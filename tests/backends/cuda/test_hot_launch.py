"""The native hot launch (``backends/cuda/launch/hot_launch.py``, ``runtime/hot_path.py``).

First the builtin alone over ctypes stand-ins for the driver (``test_trampoline.Recorder``): it
binds positional and keyword arguments as Python does, launches with the bytes ``struct`` packs
when every fact holds, and hands every other call, unchanged, to its fallback, having launched
nothing.  Then ``kernel[grid](...)`` over the C stand-in libcuda with fake torch tensors: the
steady launch is served by the hot builtin (the Python launch function does not run, seen with
``sys.setprofile``), and every change of fact, option, backend choice, device, thread context or
driver runs the Python launch function, with the right bytes launched (or the general path's
error).  The last tests use real torch CPU tensors in the launcher's stub mode."""

from __future__ import annotations

import ctypes
import struct
import sys
import threading
import types
from contextlib import contextmanager

import pytest
from test_direct_launch import Tensor, _last, direct_mix, fake, needs_native, real_torch, stub  # noqa: F401  (fixtures)
from test_trampoline import CONTEXT, FUNCTION, Recorder, _address

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import runtime
from tiles.backends.cuda.driver import Driver
from tiles.backends.cuda.launch import direct_launch, hot_launch
from tiles.backends.launch_facts import MISSING_DEFAULT, Alignment, ArgKind, Expected, IntClass
from tiles.core.errors import CompilationError, LaunchError

needs_hot = pytest.mark.skipif(hot_launch.unavailable_reason() is not None,
                               reason=f"no hot launch here: {hot_launch.unavailable_reason()}")
FMT = "@QQiqf3i"  # direct_mix's argument struct: x, out, n, big, alpha, grid (BLOCK is a constant)


# -- the builtin alone ---------------------------------------------------------------------------
class Unit:
    """A hot launch of ``k(t, n, alpha=0.5, B=8)`` (t a tensor, B a constexpr) over a Recorder."""

    def __init__(self, n_class=IntClass.I32_OTHER, alignment=Alignment.ALIGNED, backend="cuda", registry_state=None):
        self.recorder = Recorder()
        self.recorder.set_current(CONTEXT)
        self.generation = ctypes.c_uint64(3)
        self.direct = direct_launch.make(_address(self.recorder.get_current), _address(self.recorder.launch),
                                         CONTEXT, FUNCTION, 64, 0, ["Q", "i", "f", None], self.generation,
                                         lambda device: 0x5000 + device, 0)
        self.backend = backend
        self.fallbacks: list[tuple[tuple, dict]] = []
        self.failures: list[tuple[int, object]] = []
        expected = [Expected(ArgKind.TENSOR, Tensor, Tensor.dtype, 0, alignment), Expected(ArgKind.INT, expect=n_class),
                    Expected(ArgKind.FLOAT), Expected(ArgKind.CONSTANT, obj=8)]
        self.hot = hot_launch.make(self.direct, self.fallback, "compiled", self.failed, ["t", "n", "alpha", "B"],
                                   [MISSING_DEFAULT, MISSING_DEFAULT, 0.5, 8], expected, backend, registry_state)
        assert self.hot is not None

    def __call__(self, *args, **kwargs):
        """The hot launch, with ``backend="cuda"`` unless given (the key was made with it)."""
        if self.backend is not None:
            kwargs.setdefault("backend", self.backend)
        return self.hot(*args, **kwargs)

    def fallback(self, *args, **kwargs):
        self.fallbacks.append((args, kwargs))
        return "fallback"

    def failed(self, status, grid):
        self.failures.append((status, grid))
        raise LaunchError(f"status {status}")

    def launched(self, grid, t, n, alpha, stream=0x5000):
        call = self.recorder.calls[-1]
        full = (*grid, 1, 1)[:3]
        assert call.arguments == struct.pack("@Qif3i", t.address, n, alpha, *full)
        assert (call.function, call.grid, call.block, call.stream) == (FUNCTION, full, (64, 1, 1), stream)


@needs_native
@needs_hot
def test_the_builtin_binds_as_python_does_and_launches_the_bytes_struct_packs(rng):
    unit = Unit()
    for _ in range(4):
        t = Tensor(int(rng.integers(1, 2**40)) * 16)
        n = int(rng.integers(2, 2**20)) * 16 + int(rng.integers(1, 16))
        alpha = float(rng.standard_normal())
        grid = tuple(int(g) for g in rng.integers(1, 2**31, int(rng.integers(1, 4))))
        calls = [((grid, t, n, alpha), {}), ((grid, t, n), {"alpha": alpha}),
                 ((grid,), {"n": n, "t": t, "alpha": alpha}),
                 ((grid, t, n, alpha, 8), {"stream": None, "backend": "cuda", "warmup": False}),
                 ((grid, t), {"n": n, "B": 8, "alpha": alpha, "num_warps": None, "num_stages": None, "debug": None})]
        for args, kwargs in calls:
            before = len(unit.recorder.calls)
            assert unit(*args, **kwargs) == "compiled"
            assert len(unit.recorder.calls) == before + 1 and unit.fallbacks == []
            unit.launched(grid, t, n, alpha)
    assert unit((2,), Tensor(0x100), 33) == "compiled"  # alpha's default
    unit.launched((2,), Tensor(0x100), 33, 0.5)
    assert unit((2,), Tensor(0x100), 33, 1.0, stream=0x77) == "compiled"
    unit.launched((2,), Tensor(0x100), 33, 1.0, stream=0x77)


@needs_native
@needs_hot
def test_every_other_call_goes_to_the_fallback_unchanged():
    unit = Unit()
    t = Tensor(0x1000)
    other_dtype = Tensor(0x1000)
    other_dtype.dtype = "torch.float16"
    calls = [
        ((), {}), (((1,),), {}), (((1,), t, 33, 1.0, 8, 9), {}),  # no grid, missing, too many
        (((1,), t, 33), {"t": t}), (((1,), t, 33), {"num_ctas": 1}), (((1,), t, 33), {"warmup": True}),
        (((1,), t, 33), {"num_warps": 4}), (((1,), t, 33), {"num_stages": 3}), (((1,), t, 33), {"debug": False}),
        (((1,), t, 33), {"backend": "opencl"}), (((1,), t, 33), {"backend": None}),
        (((1,), t, 33), {"stream": types.SimpleNamespace(cuda_stream=3)}), (((1,), t, 33), {"stream": -1}),
        (((1,), Tensor(0x1004), 33), {}), (((1,), other_dtype, 33), {}), (((1,), Tensor(0x1000, 1), 33), {}),
        (((1,), 0x1000, 33), {}), (((1,), t, 32), {}), (((1,), t, 1), {}), (((1,), t, 2**31), {}),
        (((1,), t, 33.0), {}), (((1,), t, True), {}), (((1,), t, None), {}), (((1,), t, 33, 1), {}),
        (((1,), t, 33), {"B": 16}), (((1,), t, 33), {"B": 8.0}), (((1,), t, 33), {"B": [8]}),
        (((0,), t, 33), {}), (([1], t, 33), {}), ((7, t, 33), {}),
    ]
    for args, kwargs in calls:
        unit.fallbacks.clear()
        assert unit(*args, **kwargs) == "fallback", (args, kwargs)
        assert unit.fallbacks == [(args, {"backend": "cuda", **kwargs})], (args, kwargs)
    assert unit.recorder.calls == []
    unit.generation.value += 1  # a swapped driver: the direct launch declines
    assert unit((1,), t, 33) == "fallback"
    unit.generation.value -= 1
    unit.recorder.set_current(CONTEXT + 16)  # another context current in this thread
    assert unit((1,), t, 33) == "fallback" and unit.recorder.calls == []
    unit.recorder.set_current(CONTEXT)
    assert unit((1,), t, 33, B=8) == "compiled" and len(unit.recorder.calls) == 1
    assert sys.exc_info() == (None, None, None)


@needs_native
@needs_hot
def test_a_grid_function_is_called_once_with_the_arguments():
    unit = Unit()
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return answer

    t = Tensor(0x1000)
    answer = (3, 2)
    assert unit(grid, t, 33, B=8) == "compiled" and unit.fallbacks == []
    unit.launched((3, 2), t, 33, 0.5)
    assert seen == [{"t": t, "n": 33, "alpha": 0.5, "B": 8, "num_warps": 4, "num_stages": 3}]
    for answer in ((0,), [4], (2**31,), "x"):  # the launch function gets the evaluated grid
        unit.fallbacks.clear()
        assert unit(grid, t, 33) == "fallback"
        assert unit.fallbacks == [(((answer, t, 33)), {"backend": "cuda"})]
    assert len(seen) == 5 and len(unit.recorder.calls) == 1
    unit.fallbacks.clear()
    assert unit(grid, Tensor(0x1004), 33) == "fallback" and len(seen) == 5  # a fact differs: not called
    assert len(unit.fallbacks) == 1 and unit.fallbacks[0][0][0] is grid

    def broken(meta):
        raise ZeroDivisionError("in the grid function")
    with pytest.raises(ZeroDivisionError, match="in the grid function"):  # as from the launch function
        unit(broken, t, 33)
    assert len(unit.fallbacks) == 1 and len(unit.recorder.calls) == 1


@needs_native
@needs_hot
@pytest.mark.parametrize("n_class,good,bad", [
    (IntClass.I32_ONE, [1], [0, 16, 2, -1, 2**31 + 1]),
    (IntClass.I32_DIV16, [0, 16, -16, 2**31 - 16], [1, 17, 2**31, 2**35]),
    (IntClass.I32_OTHER, [2, 17, -1, 2**31 - 1, -2**31 + 1], [1, 0, 32, 2**31 + 1]),
    (IntClass.I32_ANY, [1, 0, 17, -2**31, 2**31 - 1], [2**31, -2**31 - 1]),
    (IntClass.I64_DIV16, [2**31, 2**40, -2**63], [2**31 + 1, 16, 2**63, 2**64]),
    (IntClass.I64_OTHER, [2**31 + 1, 2**63 - 1, -2**31 - 1], [2**32, 7, 2**63 + 1]),
    (IntClass.I64_ANY, [2**31, -2**63, 2**63 - 1], [2**63, 5, -2**63 - 1])])
def test_int_classes(n_class, good, bad):
    unit = Unit(n_class=n_class)
    for n in good + bad:
        unit.fallbacks.clear()
        unit((1,), Tensor(0x1000), n)
        assert (unit.fallbacks == []) == (n in good and -2**31 <= n < 2**31), n  # the i32 struct slot refuses
        # int64 values the hot launch accepts reach the direct launch, which declines what "i" cannot hold


@needs_native
@needs_hot
def test_link_and_retire():
    first, second = Unit(alignment=Alignment.ALIGNED), Unit(alignment=Alignment.UNALIGNED)
    hot_launch.link(first.hot, second.hot)
    assert first((1,), Tensor(0x1004), 3) == "compiled" and len(second.recorder.calls) == 1  # second served
    assert first.fallbacks == [] and first.recorder.calls == []
    assert first((1,), Tensor(0x1000), 3.5) == "fallback"  # neither takes a float n: second's fallback
    assert first.fallbacks == [] and len(second.fallbacks) == 1 and second.fallbacks[0][0][2] == 3.5
    hot_launch.link(first.hot, None)
    assert first((1,), Tensor(0x1004), 3) == "fallback" and len(first.fallbacks) == 1
    hot_launch.retire(first.hot)
    assert first((1,), Tensor(0x1000), 3) == "fallback" and first.recorder.calls == []  # its own key too
    assert len(first.fallbacks) == 2


@needs_native
@needs_hot
def test_alignment_and_a_failed_launch():
    unit = Unit(alignment=Alignment.UNALIGNED)
    assert unit((1,), Tensor(0x1000), 3) == "fallback"
    assert unit((1,), Tensor(0x1004), 3) == "compiled"
    anywhere = Unit(alignment=Alignment.ANY)
    assert anywhere((1,), Tensor(0x1004), 3) == anywhere((1,), Tensor(0x1000), 3) == "compiled"
    anywhere.recorder.launch_status = 700
    with pytest.raises(LaunchError, match="status 700"):
        anywhere((5,), Tensor(0x1000), 3)
    assert anywhere.failures == [(700, (5,))] and anywhere.fallbacks == []


@needs_native
@needs_hot
def test_the_registry_state_is_watched(monkeypatch):
    generation = ctypes.c_uint64(10)
    raw = {b"TILES_BACKEND": b"cuda"}
    keys = (b"TILES_INTERPRET", b"TILES_BACKEND")
    unit = Unit(backend=None, registry_state=(generation, raw, keys, (None, raw[b"TILES_BACKEND"])))
    t = Tensor(0x1000)
    assert unit((1,), t, 3) == unit((1,), t, 3, backend=None) == "compiled"
    assert unit((1,), t, 3, backend="cuda") == "fallback"
    raw[b"TILES_BACKEND"] = b"cuda"[:3] + b"a"  # an equal value, another object: checked again in Python
    assert unit((1,), t, 3) == "fallback"
    unit.registry_values = raw[b"TILES_BACKEND"]
    unit2 = Unit(backend=None, registry_state=(generation, raw, keys, (None, raw[b"TILES_BACKEND"])))
    assert unit2((1,), t, 3) == "compiled"
    raw[b"TILES_INTERPRET"] = b"1"
    assert unit2((1,), t, 3) == "fallback"
    del raw[b"TILES_INTERPRET"]
    assert unit2((1,), t, 3) == "compiled"
    generation.value += 1
    assert unit2((1,), t, 3) == "fallback"
    overridden = Unit(backend=None, registry_state=(generation, None, (None, None), (None, None)))
    raw[b"TILES_BACKEND"] = b"opencl"  # an override is set: the environment does not matter
    assert overridden((1,), t, 3) == "compiled"
    generation.value += 1
    assert overridden((1,), t, 3) == "fallback"


# -- kernel[grid](...) over the C stand-in libcuda ------------------------------------------------
@contextmanager
def python_launches(kernel):
    """How many times the kernel's Python launch function runs (in this thread) in the block."""
    code = kernel._launch_function.__code__
    calls: list[int] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append(1)
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def _hot(kernel):
    return type(kernel._fast_launch).__name__ == "builtin_function_or_method"


def _warm(x, out, **kwargs):
    for _ in range(3):
        direct_mix[(1,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", **kwargs)
    assert _hot(direct_mix)


@needs_native
@needs_hot
def test_steady_launches_are_served_natively_with_the_general_paths_bytes(fake, rng):  # noqa: F811
    x, out = Tensor(0x1000), Tensor(0x2000)
    _warm(x, out)
    for grid in ((5,), (2, 3), (4, 1, 6)):
        x, out = Tensor(int(rng.integers(1, 2**40)) * 16), Tensor(int(rng.integers(1, 2**40)) * 16)
        n, big = int(rng.integers(1, 2**30)) * 2 + 1, int(rng.integers(2**30, 2**61)) * 2 + 1
        alpha = float(rng.standard_normal())
        fake.streams[0] = int(rng.integers(1, 2**40))  # torch's current stream (the capturing one) each launch
        with python_launches(direct_mix) as calls:
            direct_mix[grid](x, out, n, big, alpha, BLOCK=128, backend="cuda")
            first = _last(fake.lib, FMT)
            direct_mix[grid](x, out=out, alpha=alpha, n=n, big=big, BLOCK=128, backend="cuda")
            assert _last(fake.lib, FMT) == first
            direct_mix.run(x, out, n, big, alpha, BLOCK=128, backend="cuda", grid=grid)
        assert calls == []
        data, stream, launched, context = first
        full = (*grid, 1, 1)[:3]
        alpha32 = struct.unpack("f", struct.pack("f", alpha))[0]
        assert struct.unpack(FMT, data) == (x.address, out.address, n, big, alpha32, *full)
        assert (stream, launched, context) == (fake.streams[0], full, runtime.primary_context(0))
    with python_launches(direct_mix) as calls:
        direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", stream=0xFEED)
    assert _last(fake.lib, FMT)[1] == 0xFEED and calls == []


@needs_native
@needs_hot
@pytest.mark.parametrize("change", ["dtype", "unaligned", "n_one", "n_div16", "n_int64", "big_int32", "float_for_int",
                                    "constexpr", "backend_object", "num_warps", "num_stages", "debug", "stream_object"])
def test_each_change_runs_the_python_launch_and_launches_right(fake, change):  # noqa: F811
    x, out = Tensor(0x1000), Tensor(0x2000)
    _warm(x, out)
    hot = direct_mix._fast_launch
    args = {"x": x, "out": out, "n": 1000, "big": 2**40 + 1, "alpha": 0.5, "BLOCK": 128, "backend": "cuda"}
    fmt = FMT
    if change == "dtype":
        args["x"] = Tensor(0x3000)
        args["x"].dtype = "torch.float16"
    elif change == "unaligned":
        args["x"] = Tensor(0x3004)
    elif change.startswith("n_"):
        args["n"] = {"n_one": 1, "n_div16": 1024, "n_int64": 2**33 + 3}[change]
        fmt = {"n_one": "@QQqf3i", "n_div16": FMT, "n_int64": "@QQqqf3i"}[change]
    elif change == "big_int32":
        args["big"], fmt = 77, "@QQiif3i"
    elif change == "float_for_int":
        args["big"], fmt = 77.5, "@QQiff3i"
    elif change == "constexpr":
        args["BLOCK"] = 64
    elif change == "backend_object":
        args["backend"] = registry.get("cuda")
    elif change in ("num_warps", "num_stages", "debug"):
        args[change] = {"num_warps": 4, "num_stages": 3, "debug": False}[change]
    else:
        args["stream"] = types.SimpleNamespace(cuda_stream=0xBEE, device_index=0)
    for round in range(2):
        with python_launches(direct_mix) as calls:
            direct_mix[(3,)](**args)
        assert calls == [1], round
        data, stream, grid, _ = _last(fake.lib, fmt)
        assert grid == (3, 1, 1) and stream == (0xBEE if change == "stream_object" else fake.streams[0])
        unpacked = struct.unpack(fmt, data)
        assert unpacked[0] == args["x"].address and unpacked[-3:] == (3, 1, 1)
        if change in ("n_div16", "n_int64"):
            assert unpacked[2] == args["n"]
    if change in ("num_warps", "num_stages", "debug", "stream_object"):
        assert direct_mix._fast_launch is hot  # served by the Python path, the hot launch stays
    else:
        assert _hot(direct_mix) and direct_mix._fast_launch is not hot  # the new key's own hot launch
        with python_launches(direct_mix) as calls:
            direct_mix[(3,)](**args)
        assert calls == []


@needs_native
@needs_hot
def test_a_grid_function_is_served_natively_and_called_once_per_launch(fake):  # noqa: F811
    x, out = Tensor(0x1000), Tensor(0x2000)
    calls_to_grid = []

    def grid(meta):
        calls_to_grid.append(meta["BLOCK"])
        return (meta["n"] // meta["BLOCK"] + 1,)

    for _ in range(3):
        direct_mix[grid](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert _hot(direct_mix) and calls_to_grid == [128] * 3
    with python_launches(direct_mix) as calls:
        direct_mix[grid](x, out, 5000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert calls == [] and calls_to_grid == [128] * 4 and _last(fake.lib, FMT)[2] == (40, 1, 1)
    with python_launches(direct_mix) as calls:
        direct_mix[grid](x, out, 5000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", num_warps=8)
    assert calls == [1] and len(calls_to_grid) == 5


@needs_native
@needs_hot
def test_alternating_keys_stay_native_up_to_the_chain_length(fake):  # noqa: F811
    from tiles.runtime.hot_path import CHAIN_LENGTH
    out = Tensor(0x2000)
    keys = [dict(x=Tensor(0x1000 + 4 * k), n=1000, BLOCK=128) for k in range(2)] + \
        [dict(x=Tensor(0x1000), n=1000, BLOCK=64 >> k) for k in range(CHAIN_LENGTH)]
    for key in keys[:CHAIN_LENGTH]:  # each key: compiled, then its hot launch installed
        for _ in range(3):
            direct_mix[(1,)](key["x"], out, key["n"], 2**40 + 1, 0.5, BLOCK=key["BLOCK"], backend="cuda")
    for _round in range(3):
        for k, key in enumerate(keys[:CHAIN_LENGTH]):
            with python_launches(direct_mix) as calls:
                direct_mix[(k + 1,)](key["x"], out, key["n"], 2**40 + 1, 0.5, BLOCK=key["BLOCK"], backend="cuda")
            assert calls == [] and _last(fake.lib, FMT)[2] == (k + 1, 1, 1)
            assert struct.unpack(FMT, _last(fake.lib, FMT)[0])[0] == key["x"].address
    extra = keys[CHAIN_LENGTH]
    for expected in ([1], [1], []):  # one more key: compiled, installed first, the oldest dropped
        with python_launches(direct_mix) as calls:
            direct_mix[(9,)](extra["x"], out, extra["n"], 2**40 + 1, 0.5, BLOCK=extra["BLOCK"], backend="cuda")
        assert calls == expected and _last(fake.lib, FMT)[2] == (9, 1, 1)
    assert len(direct_mix._hot_chain) == CHAIN_LENGTH
    dropped = keys[0]
    with python_launches(direct_mix) as calls:
        direct_mix[(2,)](dropped["x"], out, dropped["n"], 2**40 + 1, 0.5, BLOCK=dropped["BLOCK"], backend="cuda")
    assert calls == [1] and _last(fake.lib, FMT)[2] == (2, 1, 1)
    kept = direct_mix[(3,)]  # a caller's kernel[grid], bound to the first hot launch
    direct_mix._launches.clear()
    assert direct_mix._hot_chain == [] and not _hot(direct_mix)
    with python_launches(direct_mix) as calls:  # retired: it hands the call to the launch function
        kept(dropped["x"], out, dropped["n"], 2**40 + 1, 0.5, BLOCK=dropped["BLOCK"], backend="cuda")
    assert calls == [1] and _last(fake.lib, FMT)[2] == (3, 1, 1)


@needs_native
@needs_hot
def test_warmup_a_missing_argument_and_a_device_go_to_the_general_path(fake):  # noqa: F811
    x, out = Tensor(0x1000), Tensor(0x2000)
    _warm(x, out)
    before = _last(fake.lib, FMT)
    with python_launches(direct_mix) as calls:
        direct_mix[(9,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", warmup=True)
        with pytest.raises(LaunchError, match=r"test_direct_launch\.py:\d+.*alpha"):
            direct_mix[(9,)](x, out, 1000, 2**40 + 1, BLOCK=128, backend="cuda")
        with pytest.raises(TypeError, match=r"direct_mix\(\) got multiple values for argument 'x'"):  # no frame
            direct_mix[(9,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", x=x)
        with pytest.raises(LaunchError, match="different CUDA devices"):
            direct_mix[(9,)](x, Tensor(0x3000, device=1), 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
        with pytest.raises(CompilationError, match=r"test_direct_launch\.py:\d+ .*got list \[128\]"):  # unhashable
            direct_mix[(9,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=[128], backend="cuda")
    assert len(calls) == 4 and _last(fake.lib, FMT) == before


@needs_native
@needs_hot
def test_the_default_backend_follows_the_environment_and_overrides(fake, monkeypatch):  # noqa: F811
    monkeypatch.setenv("TILES_BACKEND", "cuda")
    monkeypatch.delenv("TILES_INTERPRET", raising=False)
    x, out = Tensor(0x1000), Tensor(0x2000)
    for _ in range(3):
        direct_mix[(1,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
    assert _hot(direct_mix)
    with python_launches(direct_mix) as calls:
        direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
    assert calls == [] and _last(fake.lib, FMT)[2] == (2, 1, 1)
    monkeypatch.setenv("TILES_BACKEND", "no-such-backend")
    with python_launches(direct_mix) as calls, pytest.raises(registry.BackendUnavailable, match="no-such-backend"):
        direct_mix[(3,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
    monkeypatch.setenv("TILES_BACKEND", "cuda")  # the same value again, another object: checked in Python once
    for expected in ([1], []):
        with python_launches(direct_mix) as calls:
            direct_mix[(4,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
        assert calls == expected and _last(fake.lib, FMT)[2] == (4, 1, 1)
    try:
        registry.set_backend("cuda")  # an override: the registry's generation moves
        for expected in ([1], []):
            with python_launches(direct_mix) as calls:
                direct_mix[(5,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
            assert calls == expected and _last(fake.lib, FMT)[2] == (5, 1, 1)
        monkeypatch.setenv("TILES_BACKEND", "no-such-backend")  # not consulted under an override
        with python_launches(direct_mix) as calls:
            direct_mix[(6,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
        assert calls == [] and _last(fake.lib, FMT)[2] == (6, 1, 1)
    finally:
        registry.set_backend(None)
    with python_launches(direct_mix) as calls, pytest.raises(registry.BackendUnavailable, match="no-such-backend"):
        direct_mix[(7,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128)
    assert calls == [1]


@needs_native
@needs_hot
def test_another_thread_a_swapped_driver_and_cleared_plans(fake, stub):  # noqa: F811
    x, out = Tensor(0x1000), Tensor(0x2000)
    _warm(x, out)
    seen = []

    def other_thread():  # no current context in a new thread: the Python path makes it current
        with python_launches(direct_mix) as calls:
            direct_mix[(7,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
        seen.append((list(calls), ctypes.c_void_p.in_dll(stub, "last_context").value))
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [([1], runtime.primary_context(0))]
    runtime.use_driver(Driver(stub))  # a swapped driver: the direct launch declines
    with python_launches(direct_mix) as calls:
        direct_mix[(8,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert calls == [1] and _last(fake.lib, FMT)[2] == (8, 1, 1)
    direct_mix._launches.clear()
    assert not _hot(direct_mix)


@needs_native
@needs_hot
def test_threads_alternating_keys_while_chains_change(fake):  # noqa: F811
    """Six threads launch three keys in turn (the chain relinked under them), with thread switches
    every microsecond, and the plans are dropped while they run: no error, no crash, and the
    kernel launches right afterwards."""
    out = Tensor(0x2000)
    keys = [Tensor(0x1000), Tensor(0x1004), Tensor(0x1008)]
    for x in keys:
        for _ in range(3):
            direct_mix[(1,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    errors: list[BaseException] = []
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def worker(index):
        try:
            for i in range(300):
                direct_mix[(index + 1,)](keys[(i + index) % 3], out, 1000, 2**40 + 1, 0.5, BLOCK=128,
                                         backend="cuda")
                if index == 0 and i == 150:
                    direct_mix._launches.clear()
        except BaseException as e:  # reported below
            errors.append(e)
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(before)
    assert errors == []
    direct_mix[(9,)](keys[0], out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert _last(fake.lib, FMT)[2] == (9, 1, 1)


@tiles.jit
def hot_optional(x, out, bias, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    if bias is not None:
        v += tl.load(bias + offs, mask=mask)
    tl.store(out + offs, v, mask=mask)


@needs_native
@needs_hot
def test_none_where_a_tensor_was(fake):  # noqa: F811
    hot_optional._binder_tensor = None
    x, out, bias = Tensor(0x1000), Tensor(0x2000), Tensor(0x3000)
    try:
        hot_optional[(1,)](x, out, None, 100, BLOCK=128, backend="cuda")  # its launch function is rebuilt
        for value, fmt, expected in ((None, "@QQi3i", [[1], [1], []]), (bias, "@QQQi3i", [[1], [1], []]),
                                     (None, "@QQi3i", [[], []])):  # None's hot launch: still chained
            for python in expected:
                with python_launches(hot_optional) as calls:
                    hot_optional[(1,)](x, out, value, 100, BLOCK=128, backend="cuda")
                assert calls == python
                assert struct.unpack(fmt, _last(fake.lib, fmt)[0])[:2] == (0x1000, 0x2000)
            assert _hot(hot_optional)
    finally:
        hot_optional._launches.clear()


SHIFT = tl.constexpr(2.0)


@tiles.jit
def guarded_mix(x, out, n, big, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * alpha + big.to(tl.float32) + SHIFT, mask=mask)


@needs_native
@needs_hot
def test_a_global_constexpr_is_checked_natively_and_a_rebinding_refused(fake):  # noqa: F811
    """A kernel reading a module global keeps its hot launch; the hot launch declines once the
    global is another object, and the launch function raises as Triton does (nothing launched);
    an equal value is taken and the kernel goes native again."""
    global SHIFT
    guarded_mix._launches.clear()
    guarded_mix._binder_tensor = None
    x, out = Tensor(0x1000), Tensor(0x2000)

    def launch(grid):
        guarded_mix[grid](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    try:
        for _ in range(3):
            launch((1,))
        assert _hot(guarded_mix) and [g.name for g in guarded_mix._guards] == ["SHIFT"]
        with python_launches(guarded_mix) as calls:
            launch((2,))
        assert calls == [] and _last(fake.lib, FMT)[2] == (2, 1, 1)
        SHIFT = tl.constexpr(3.0)
        for _ in range(2):
            with python_launches(guarded_mix) as calls, pytest.raises(
                    RuntimeError, match=r"Global variable SHIFT has changed since we compiled this kernel, "
                                        r"from constexpr\[2\.0\] to constexpr\[3\.0\]"):
                launch((5,))
            assert calls == [1] and _last(fake.lib, FMT)[2] == (2, 1, 1)  # declined natively, not launched
        SHIFT = tl.constexpr(2.0)  # equal: the launch function takes it and the hot launch is rebuilt
        for _ in range(3):
            launch((3,))
        assert _hot(guarded_mix) and _last(fake.lib, FMT)[2] == (3, 1, 1)
        with python_launches(guarded_mix) as calls:
            launch((4,))
        assert calls == [] and _last(fake.lib, FMT)[2] == (4, 1, 1)
    finally:
        SHIFT = tl.constexpr(2.0)
        guarded_mix._launches.clear()


# -- real torch CPU tensors, in the launcher's stub mode -------------------------------------------
@needs_native
@needs_hot
def test_real_torch_tensors(real_torch, stub):  # noqa: F811
    torch, streams = real_torch.torch, real_torch.streams
    x, out = torch.empty(1000), torch.empty(1000)
    for _ in range(3):
        direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert _hot(direct_mix)
    for shift, expected in ((0, []), (1, [1]), (1, [1]), (1, [])):
        y = torch.empty(1001)[shift:]
        streams[0] = 0x300 + shift
        with python_launches(direct_mix) as calls:
            direct_mix[(3,)](y, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
        assert calls == expected
        data, stream, grid, _ = _last(stub, FMT)
        assert struct.unpack(FMT, data)[:2] == (y.data_ptr(), out.data_ptr()) and stream == 0x300 + shift
    half = torch.empty(1000, dtype=torch.float16)
    with python_launches(direct_mix) as calls:
        direct_mix[(3,)](half, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert calls == [1] and struct.unpack(FMT, _last(stub, FMT)[0])[0] == half.data_ptr()


def test_launch_facts_of_the_binder_keys():
    from tiles.runtime.hot_path import expectations
    from tiles.runtime.specialize import FLOAT_FACT, NONE_FACT, fact_of
    key = (object(), None, None, "dtype", 0, ("dtype", Alignment.UNALIGNED), 0, int(IntClass.I32_DIV16), None,
           fact_of(2**40, "s"), None, FLOAT_FACT, None, NONE_FACT, None, 128)
    assert expectations(key, "ssssssc", Tensor) == [
        Expected(ArgKind.TENSOR, Tensor, "dtype", 0, Alignment.ALIGNED),
        Expected(ArgKind.TENSOR, Tensor, "dtype", 0, Alignment.UNALIGNED),
        Expected(ArgKind.INT, expect=IntClass.I32_DIV16), Expected(ArgKind.INT, expect=IntClass.I64_DIV16),
        Expected(ArgKind.FLOAT), Expected(ArgKind.NONE), Expected(ArgKind.CONSTANT, obj=128)]
    assert expectations((None, None, None, "dtype", 0, int(IntClass.I32_ANY), None, fact_of(2**40, "n")), "nn",
                        Tensor) == [Expected(ArgKind.TENSOR, Tensor, "dtype", 0, Alignment.ANY),
                                    Expected(ArgKind.INT, expect=IntClass.I32_ANY)]
    assert expectations((None, None, None, fact_of(2**63 + 16, "s"), None), "s", Tensor) is None
    assert expectations((None, None, None, ("a", "float32"), None), "s", Tensor) is None


# -- on a GPU ----------------------------------------------------------------------------------------
def _gpu_torch():
    torch = pytest.importorskip("torch", reason="the GPU test drives CUDA through torch tensors")
    usable, why = registry.status("cuda")
    if not (usable and torch.cuda.is_available()):
        pytest.skip(f"no CUDA GPU for tiles and torch: {why}")
    return torch


@needs_hot
def test_on_the_gpu_hot_launches_follow_the_current_stream_and_graph_capture():
    torch = _gpu_torch()
    import stream_kernels as K
    g = torch.Generator(device="cpu").manual_seed(11)
    x, y = (torch.randn(5000, generator=g).cuda() for _ in range(2))
    out = torch.full_like(x, float("nan"))

    def grid(meta):
        return (-(-meta["n"] // meta["BLOCK"]),)

    def launch(alpha, xs=x, dest=out, n=5000):
        K.scale_add_kernel[grid](xs, y, dest, n, alpha, BLOCK=256, backend="cuda")

    for alpha in (1.0, 2.0, 3.0):
        launch(alpha)
    assert type(K.scale_add_kernel._fast_launch).__name__ == "builtin_function_or_method"
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 3.0 * x + y)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), python_launches(K.scale_add_kernel) as calls:
        launch(4.0)
    assert calls == []
    side.synchronize()
    torch.testing.assert_close(out, 4.0 * x + y)
    captured = torch.full_like(x, float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        launch(5.0, dest=captured)  # warm on the side stream, as torch asks before capture
    side.synchronize()
    with torch.cuda.graph(graph), python_launches(K.scale_add_kernel) as calls:
        launch(6.0, dest=captured)  # recorded on the capturing stream, not run
    assert calls == []
    captured.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(captured, 6.0 * x + y)
    x.mul_(-1.0)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(captured, 6.0 * x + y)
    shifted = torch.randn(5001, generator=g).cuda()[1:]  # unaligned: another key
    with python_launches(K.scale_add_kernel) as calls:
        launch(7.0, xs=shifted)
    assert calls == [1]
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 7.0 * shifted + y)
