"""The native direct launch (``backends/cuda/launch/direct_launch.py``) and the binder's path to it.

First the builtin alone against ctypes stand-ins for ``cuCtxGetCurrent``/``cuLaunchKernel``
(``test_trampoline.Recorder``): every byte it hands the driver equals ``struct.pack``'s, values
``struct`` refuses step aside without launching, and the count, driver generation, context and
stream rules.  Then ``kernel[grid](...)`` end to end over the C stand-in libcuda with fake torch
tensors: the binder's key finds the direct launch, the bytes equal the general path's, the
caller's stream and torch's current stream are honoured, a tensor on another device is still
refused, and a swapped driver is noticed.  The last tests use real torch CPU tensors in the
launcher's stub mode (``launcher.stub_cpu_device``) when torch is importable."""

from __future__ import annotations

import ctypes
import inspect
import itertools
import struct
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from test_trampoline import CC, CONTEXT, FUNCTION, Recorder, _address

import tiles
import tiles.language as tl
from tiles.backends.base import PlannedArg
from tiles.backends.cuda import CUDABackend, runtime
from tiles.backends.cuda.driver import Driver, load_library
from tiles.backends.cuda.launch import direct_launch, launcher, trampoline
from tiles.core.dtypes import PointerType
from tiles.core.errors import LaunchError
from tiles.runtime.binder import make_binder
from tiles.runtime.specialize import classify

REASON = direct_launch.unavailable_reason() or trampoline.unavailable_reason()
needs_native = pytest.mark.skipif(REASON is not None, reason=f"no native launch here: {REASON}")
KINDS = "QqiIfd"


def _edge(code: str, rng) -> object:
    choices = {
        "Q": [0, 1, 2**64 - 1, 2**63, int(rng.integers(0, 2**63))],
        "q": [-2**63, 2**63 - 1, -1, 0, int(rng.integers(-2**62, 2**62))],
        "i": [-2**31, 2**31 - 1, -1, 0, int(rng.integers(-2**31, 2**31))],
        "I": [0, 2**32 - 1, 2**31, int(rng.integers(0, 2**32))],
        "f": [-0.0, float("inf"), float("-inf"), float("nan"), 3.4028234663852886e38, 1e-45, 1e-46, 1e300, -3.5e38,
              float(rng.standard_normal())],
        "d": [-0.0, float("nan"), 1e308, -5e-324, float(rng.standard_normal())],
    }[code]
    return choices[int(rng.integers(0, len(choices)))]


class Native:
    """A direct launch of a kernel with parameter ``codes`` over a Recorder."""

    def __init__(self, codes, device=0, stream=lambda device: 0x5000 + device, block=128, shared=0):
        self.recorder = Recorder()
        self.recorder.set_current(CONTEXT)
        self.generation = ctypes.c_uint64(7)
        self.codes = codes
        self.direct = direct_launch.make(_address(self.recorder.get_current), _address(self.recorder.launch),
                                         CONTEXT, FUNCTION, block, shared, codes, self.generation, stream, device)
        assert self.direct is not None

    def expected(self, values, grid) -> bytes:
        fmt = "@" + "".join(c for c in self.codes if c) + "iii"
        return struct.pack(fmt, *[v for c, v in zip(self.codes, values) if c], *grid)


@needs_native
@pytest.mark.parametrize("count", [0, 1, 2, 5, 9, 17])
def test_every_kind_arrives_as_struct_packs_it(rng, count):
    codes = [None if rng.random() < 0.2 else str(rng.choice(list(KINDS))) for _ in range(count)]
    native = Native(codes)
    for _ in range(6):
        values = [("skipped", None) if c is None else _edge(c, rng) for c in codes]
        grid = tuple(int(g) for g in rng.integers(1, 2**31, int(rng.integers(1, 4))))
        full = grid + (1,) * (3 - len(grid))
        stream = None if rng.random() < 0.5 else int(rng.integers(0, 2**63))
        assert native.direct(stream, grid, *values) == 0
        call = native.recorder.calls[-1]
        assert call.arguments == native.expected(values, full)
        assert (call.function, call.grid, call.block, call.stream) == (FUNCTION, full, (128, 1, 1),
                                                                       0x5000 if stream is None else stream)
        assert call.extra == (1, 2, 0) and call.params == 0


@needs_native
@pytest.mark.parametrize("code,value", [("i", 2**31), ("i", -2**31 - 1), ("I", -1), ("I", 2**32), ("Q", -1),
                                        ("Q", 2**64), ("q", 2**63), ("i", "7"),
                                        ("f", "x"), ("Q", 1.5), ("q", None)])
def test_what_struct_refuses_steps_aside_without_launching(code, value):
    native = Native(["Q", code, "f"])
    with pytest.raises((struct.error, OverflowError, TypeError)):
        native.expected([16, value, 1.0], (1, 1, 1))
    assert native.direct(None, (1,), 16, value, 1.0) == trampoline.FALLBACK  # and no error left set
    assert native.recorder.calls == []
    assert native.direct(None, (1,), 16, 3 if code in "iIQq" else 3.0, 1.0) == 0


@needs_native
def test_count_driver_generation_context_and_status():
    native = Native(["Q", "i"])
    assert native.direct(None, (1,), 16) == trampoline.BAD_RECORD
    assert native.direct(None, (1,), 16, 3, 4) == trampoline.BAD_RECORD
    native.generation.value += 1  # runtime.use_driver swapped the driver
    assert native.direct(None, (1,), 16, 3) == trampoline.FALLBACK
    native.generation.value -= 1
    native.recorder.set_current(CONTEXT + 1)
    assert native.direct(None, (1,), 16, 3) == trampoline.FALLBACK
    native.recorder.set_current(CONTEXT)
    native.recorder.query_status = 201
    assert native.direct(None, (1,), 16, 3) == trampoline.FALLBACK
    native.recorder.query_status = 0
    assert native.recorder.calls == []
    native.recorder.launch_status = 700
    assert native.direct(None, (1,), 16, 3) == 700
    for grid in ((0, 1, 1), (1, 2**31, 1), (1, 1, -1), (), (1, 1, 1, 1), [1], 1, (1.0,), (True,), (2**64,)):
        assert native.direct(None, grid, 16, 3) == trampoline.FALLBACK
    assert len(native.recorder.calls) == 1


@needs_native
def test_stream_rules():
    asked = []

    def current(device):
        asked.append(device)
        return 0xABC

    native = Native(["Q"], device=3, stream=current)
    assert native.direct(None, (1,), 16) == 0
    assert (asked, native.recorder.calls[-1].stream) == ([3], 0xABC)
    assert native.direct(0x77, (1, 1), 16) == 0 and native.recorder.calls[-1].stream == 0x77
    for other in (True, types.SimpleNamespace(cuda_stream=5), -1, 2**64):
        assert native.direct(other, (1, 1, 1), 16) == trampoline.FALLBACK
    assert len(native.recorder.calls) == 2 and asked == [3]

    def broken(device):
        raise RuntimeError("CUDA not initialized")

    failing = Native(["Q"], stream=broken)
    with pytest.raises(RuntimeError, match="not initialized"):
        failing.direct(None, (1,), 16)
    assert failing.recorder.calls == []


def test_codes_without_a_native_conversion_get_none():
    assert direct_launch.layout(["Q", None, "i"]) == [(1, 0), (0, 0), (3, 8)]
    assert direct_launch.layout(["i", "Q", "f", "d"]) == [(3, 0), (1, 8), (5, 16), (6, 24)]
    for code in "eH?bBh":
        assert direct_launch.layout(["Q", code]) is None


# -- kernel[grid](...) over the C stand-in libcuda ----------------------------------------------
@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler to build the stand-in libcuda")
    path = tmp_path_factory.mktemp("stub") / "libcuda_stub.so"
    subprocess.run([CC, "-O2", "-shared", "-fPIC", "-o", str(path), str(Path(__file__).parent / "libcuda_stub.c")],
                   check=True)
    return load_library(str(path))


class Tensor:
    """A float32 torch CUDA tensor for the fake torch below."""

    __module__ = "torch"
    is_cuda = True
    dtype = "torch.float32"

    def __init__(self, address: int, device: int = 0) -> None:
        self.address, self.device_index = address, device

    def get_device(self) -> int:
        return self.device_index

    def data_ptr(self) -> int:
        return self.address


@tiles.jit
def direct_mix(x, out, n, big, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * alpha + big.to(tl.float32), mask=mask)


@pytest.fixture
def fake(stub, monkeypatch):
    streams = {0: 0x100, 1: 0x101}
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: streams[device])  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    runtime.use_driver(Driver(stub))
    direct_mix._launches.clear()
    direct_mix._binder_tensor = None  # the binder's tensor type is this torch.Tensor from the next launch
    yield types.SimpleNamespace(lib=stub, streams=streams)
    runtime.use_driver(None)
    direct_mix._launches.clear()


def _last(stub, fmt):
    size = ctypes.c_size_t.in_dll(stub, "last_size").value
    assert size == struct.calcsize(fmt)
    return (ctypes.string_at(ctypes.addressof(ctypes.c_ubyte.in_dll(stub, "last_args")), size),
            ctypes.c_void_p.in_dll(stub, "last_stream").value, tuple((ctypes.c_uint * 3).in_dll(stub, "last_grid")),
            ctypes.c_void_p.in_dll(stub, "last_context").value)


def _entry(kernel):
    entries = [e for e in kernel._launches.values() if getattr(e, "direct", None) is not None]
    assert len(entries) == 1
    return entries[0]


def _no_general_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the launch took the general path")
    monkeypatch.setattr(runtime, "launch", refuse)
    monkeypatch.setattr(runtime, "make_current", refuse)


@needs_native
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_keyed_launches_go_direct_with_the_general_paths_bytes(fake, rng, monkeypatch, native):
    """The native direct launch, and the Python one kept where it cannot be built."""
    monkeypatch.setattr(direct_launch, "enabled", native)
    fmt = "@QQiqf3i"
    x, out = Tensor(int(rng.integers(1, 2**40)) * 16), Tensor(int(rng.integers(1, 2**40)) * 16)
    for _ in range(2):  # the first launch compiles and makes the context current
        direct_mix[(3,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    entry = _entry(direct_mix)
    assert type(entry.direct).__name__ == ("builtin_function_or_method" if native else "function")
    names = direct_mix.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name == "out")
            for p in entry.compiled.ir.params]
    general = CUDABackend().make_launcher(entry.compiled, plan)
    for grid in ((5,), (2, 3), (4, 1, 6)):
        n, big = int(rng.integers(1, 2**30)) * 2 + 1, int(rng.integers(2**30, 2**61)) * 2 + 1  # the same facts
        alpha = float(rng.standard_normal())
        x, out = Tensor(int(rng.integers(1, 2**40)) * 16), Tensor(int(rng.integers(1, 2**40)) * 16)
        fake.streams[0] = int(rng.integers(1, 2**40))
        with monkeypatch.context() as patch:
            _no_general_path(patch)
            direct_mix[grid](x, out, n, big, alpha, BLOCK=128, backend="cuda")
        direct_bytes, stream, launched, context = _last(fake.lib, fmt)
        full = (*grid, 1, 1)[:3]
        assert (stream, launched, context) == (fake.streams[0], full, runtime.primary_context(0))
        assert struct.unpack(fmt, direct_bytes) == (x.address, out.address, n, big, np.float32(alpha).item(), *full)
        general(full, [x, out, n, big, alpha, 128], stream=fake.streams[0])
        assert _last(fake.lib, fmt)[0] == direct_bytes
    direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", stream=0xFEED)
    assert _last(fake.lib, fmt)[1] == 0xFEED
    side = types.SimpleNamespace(cuda_stream=0xBEE, device_index=0)  # a torch.cuda.Stream: the launcher's path
    direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda", stream=side)
    assert _last(fake.lib, fmt)[1] == 0xBEE


@needs_native
def test_a_tensor_on_another_device_is_still_refused(fake):
    x, out = Tensor(0x1000), Tensor(0x2000)
    for _ in range(2):
        direct_mix[(1,)](x, out, 10, 2**40, 1.0, BLOCK=128, backend="cuda")
    with pytest.raises(LaunchError, match="different CUDA devices"):
        direct_mix[(1,)](x, Tensor(0x3000, device=1), 10, 2**40, 1.0, BLOCK=128, backend="cuda")
    launches = (ctypes.c_uint * 3).in_dll(fake.lib, "last_grid")[0]
    with pytest.raises(LaunchError, match="device 1 does not exist"):  # the stand-in has one device
        direct_mix[(9,)](Tensor(0x4000, 1), Tensor(0x5000, 1), 10, 2**40, 1.0, BLOCK=128, backend="cuda")
    assert (ctypes.c_uint * 3).in_dll(fake.lib, "last_grid")[0] == launches != 9


@needs_native
def test_a_swapped_driver_is_noticed(fake, stub):
    x, out = Tensor(0x1000), Tensor(0x2000)
    for _ in range(2):
        direct_mix[(1,)](x, out, 10, 2**40, 1.0, BLOCK=128, backend="cuda")
    entry = _entry(direct_mix)
    replacement = Driver(stub)
    runtime.use_driver(replacement)
    assert entry.direct(None, (1,), 0x1000, 0x2000, 10, 2**40, 1.0, 128) == trampoline.FALLBACK
    direct_mix[(4,)](x, out, 10, 2**40, 1.0, BLOCK=128, backend="cuda")  # through the new driver's general path
    assert _last(fake.lib, "@QQiqf3i")[2] == (4, 1, 1)


# -- real torch CPU tensors, in the launcher's stub mode -----------------------------------------
@pytest.fixture
def real_torch(stub, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(launcher, "stub_cpu_device", 0)
    streams = {0: 0x300}
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: streams[device], raising=False)
    runtime.use_driver(Driver(stub))
    direct_mix._launches.clear()
    direct_mix._binder_tensor = None  # the binder's tensor type is torch.Tensor from the next launch
    yield types.SimpleNamespace(torch=torch, streams=streams)
    runtime.use_driver(None)
    direct_mix._launches.clear()
    # kernels defined while torch was absent rebuild their binder on their next launch


@needs_native
def test_real_torch_tensors_launch_direct(real_torch, stub, rng):
    torch = real_torch.torch
    direct_mix._binder_tensor = None  # the binder's tensor type is torch.Tensor from now on
    x, out = torch.empty(1000), torch.empty(1000)
    for _ in range(3):
        direct_mix[(2,)](x, out, 1000, 2**40 + 1, 0.5, BLOCK=128, backend="cuda")
    assert type(_entry(direct_mix).direct).__name__ == "builtin_function_or_method"
    for seed in range(3):
        real_torch.streams[0] = 0x300 + seed
        x, out = torch.empty(int(rng.integers(1, 5000))), torch.empty(64)
        direct_mix[(seed + 1,)](x, out, 7, 2**41, -2.0, BLOCK=128, backend="cuda")
        data, stream, grid, _ = _last(stub, "@QQiqf3i")
        assert struct.unpack("@QQiqf3i", data) == (x.data_ptr(), out.data_ptr(), 7, 2**41, -2.0, seed + 1, 1, 1)
        assert (stream, grid) == (0x300 + seed, (seed + 1, 1, 1))
    weight = torch.nn.Parameter(torch.empty(32))  # a subclass: specialize's fact, its address still goes
    for _ in range(2):
        direct_mix[(1,)](weight, out, 7, 2**41, -2.0, BLOCK=128, backend="cuda")
    assert struct.unpack("@QQiqf3i", _last(stub, "@QQiqf3i")[0])[0] == weight.data_ptr()


def test_real_torch_facts_mean_equal_specializations():
    torch = pytest.importorskip("torch")
    signature = inspect.Signature([inspect.Parameter("v", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    values = [torch.empty(16), torch.empty(17)[1:], torch.empty(16, dtype=torch.float16),
              torch.empty(16, dtype=torch.float16)[8:], torch.empty(8, dtype=torch.int32), torch.empty(0),
              torch.nn.Parameter(torch.empty(16)), 16, 1, 3]
    for kind in "sn":
        bind = make_binder(signature, (kind,))
        facts = [bind(v)[0] for v in values]
        specs = [classify("v", v, False, kind == "s").key() for v in values]
        for (fa, sa, va), (fb, sb, vb) in itertools.combinations(zip(facts, specs, values), 2):
            if fa == fb:
                assert sa == sb, f"{va!r} and {vb!r} share the fact {fa!r} but specialize as {sa} and {sb}"
        assert len(set(facts)) > 3


@needs_native
def test_an_unaligned_tensor_has_its_own_key(fake):
    aligned, unaligned, out = Tensor(0x1000), Tensor(0x1004), Tensor(0x2000)
    for _ in range(2):
        direct_mix[(1,)](aligned, out, 10, 2**40, 1.0, BLOCK=128, backend="cuda")
        direct_mix[(1,)](unaligned, out, 10, 2**40, 1.0, BLOCK=128, backend="cuda")
    entries = [e for e in direct_mix._launches.values() if getattr(e, "direct", None) is not None]
    assert len(entries) == 2 and entries[0].compiled is not entries[1].compiled
    assert struct.unpack("@QQiqf3i", _last(fake.lib, "@QQiqf3i")[0])[0] == 0x1004
