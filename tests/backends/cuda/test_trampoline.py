"""The native launch trampoline (``backends/cuda/launch/trampoline.py``) against stand-in drivers.

Its ``cuCtxGetCurrent``/``cuLaunchKernel`` are ctypes callbacks that record what they receive,
so every byte the native code hands the driver is checked: grid, block, shared bytes, stream,
the ``extra`` buffer and each argument byte.  Then the jit's keyed launcher over the C stand-in
libcuda (``libcuda_stub.c``): edge values arrive as the general path packs them, a wrong current
context falls back, launch errors name the kernel, and concurrent threads each get their own
arguments.  The last test needs a GPU and torch."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import stream_kernels as K

import tiles
import tiles.language as tl
from tiles.backends.base import PlannedArg
from tiles.backends.cuda import CUDABackend, runtime
from tiles.backends.cuda.driver import CUDAError, Driver, load_library
from tiles.backends.cuda.launch import launcher, trampoline
from tiles.core.dtypes import PointerType

REASON = trampoline.unavailable_reason()
needs_trampoline = pytest.mark.skipif(REASON is not None, reason=f"no native trampoline here: {REASON}")
CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler to build the stand-in libcuda")

GET_CURRENT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_void_p))
CONTEXT, FUNCTION = 0xC0FFEE00, 0xF00D0


@dataclass
class Call:
    function: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    stream: int
    params: int
    extra: tuple[int, int, int]  # the three markers: BUFFER_POINTER, BUFFER_SIZE, END
    arguments: bytes
    thread: int


class Recorder:
    """cuCtxGetCurrent and cuLaunchKernel as ctypes callbacks: a current context per thread."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.calls: list[Call] = []
        self.queries = 0
        self.query_status = 0
        self.launch_status = 0
        self.yield_first = False  # let other threads run before reading the arguments
        self.get_current = GET_CURRENT(self._get_current)
        self.launch = LAUNCH(self._launch)

    def set_current(self, context: int) -> None:
        self.local.context = context

    def _get_current(self, out):
        self.queries += 1
        out[0] = getattr(self.local, "context", 0) or None
        return self.query_status

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.yield_first:
            time.sleep(0)
        size = ctypes.c_size_t.from_address(extra[3]).value
        self.calls.append(Call(function or 0, (gx, gy, gz), (bx, by, bz), shared, stream or 0, params or 0,
                               (extra[0] or 0, extra[2] or 0, extra[4] or 0), ctypes.string_at(extra[1], size),
                               threading.get_ident()))
        return self.launch_status

    def trampoline(self, block: int, shared: int, record_size: int):
        native = trampoline.make(_address(self.get_current), _address(self.launch), CONTEXT, FUNCTION, block,
                                 shared, record_size)
        assert native is not None
        return native


def _address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value


CODES = "bBhHiIqQefd?"


def _random_record(rng, codes: str) -> tuple[bytes, int, tuple[int, int, int]]:
    """(record, stream, grid): every argument byte random (struct padding included), the grid
    three random valid sizes at the end."""
    size = struct.calcsize(trampoline.record_format(codes + "iii"))
    stream = int(rng.integers(0, 2**63)) * 2 + 1
    grid = tuple(int(g) for g in rng.integers(1, 2**31, 3))
    body = rng.integers(0, 256, size - 8 - 12, dtype=np.uint8).tobytes()
    return struct.pack("@Q", stream) + body + struct.pack("@3i", *grid), stream, grid


def test_constants_layout_matches_the_native_code():
    fields = ["Q", "Q", "Q", "Q", "I", "I", "Q", "Q"]
    offsets = [struct.calcsize("@" + "".join(fields[:i])) for i in range(len(fields))]
    assert trampoline.CONSTANTS.struct.format == "@" + "".join(fields)
    assert offsets == [trampoline.CONSTANTS.offsets[name] for name in
                       ("$GET_CURRENT", "$LAUNCH", "$CONTEXT", "$FUNCTION", "$BLOCK", "$SHARED", "$RECORD_SIZE",
                        "$ARGS_SIZE")]


@needs_trampoline
@pytest.mark.parametrize("count", [0, 1, 3, 7, 12, 29])
def test_every_byte_reaches_the_driver(rng, count):
    recorder = Recorder()
    recorder.set_current(CONTEXT)
    codes = "".join(rng.choice(list(CODES), count))
    block, shared = int(rng.integers(1, 1025)), int(rng.integers(0, 228 * 1024))
    for _ in range(5):  # fresh values each time, same kernel
        record, stream, grid = _random_record(rng, codes)
        native = recorder.trampoline(block, shared, len(record))
        assert native(record) == 0
        call = recorder.calls[-1]
        assert (call.function, call.grid, call.block, call.shared, call.stream) == \
            (FUNCTION, grid, (block, 1, 1), shared, stream)
        assert call.params == 0 and call.extra == (1, 2, 0)
        assert call.arguments == record[8:]
    assert len(recorder.calls) == 5


@needs_trampoline
def test_edge_values_arrive_bit_exact():
    codes = "qqQQiIdfffeH"
    values = (-2**63, 2**63 - 1, 0, 2**64 - 1, -2**31, 2**32 - 1,
              struct.unpack("@d", struct.pack("@Q", 0x7FF4_0000_0000_0001))[0],  # a signalling NaN
              -0.0, struct.unpack("@f", struct.pack("@I", 0xFFC1_2345))[0], float("-inf"),
              np.float16(-0.0).item(), int(np.asarray(-1.5, ml_dtypes.bfloat16).view(np.uint16)))
    record = struct.pack(trampoline.record_format(codes + "iii"), 7, *values, 3, 2, 1)
    recorder = Recorder()
    recorder.set_current(CONTEXT)
    assert recorder.trampoline(128, 0, len(record))(record) == 0
    assert recorder.calls[-1].arguments == record[8:]
    assert struct.unpack("@" + codes + "iii", recorder.calls[-1].arguments)[:6] == values[:6]


@needs_trampoline
def test_another_context_or_a_failed_query_falls_back_without_launching():
    recorder = Recorder()
    record, _, _ = _random_record(np.random.default_rng(1), "QQi")
    native = recorder.trampoline(64, 0, len(record))
    assert native(record) == trampoline.FALLBACK  # no context current
    recorder.set_current(CONTEXT + 1)
    assert native(record) == trampoline.FALLBACK
    recorder.set_current(CONTEXT)
    recorder.query_status = 3  # CUDA_ERROR_NOT_INITIALIZED
    assert native(record) == trampoline.FALLBACK
    assert recorder.calls == [] and recorder.queries == 3
    recorder.query_status = 0
    recorder.launch_status = 700  # CUDA_ERROR_ILLEGAL_ADDRESS
    assert native(record) == 700 and len(recorder.calls) == 1


@needs_trampoline
def test_a_record_of_another_size_or_type_is_refused():
    recorder = Recorder()
    recorder.set_current(CONTEXT)
    record, _, _ = _random_record(np.random.default_rng(2), "Qf")
    native = recorder.trampoline(64, 0, len(record))
    assert native(record + b"\0") == trampoline.BAD_RECORD
    assert native(record[:-4]) == trampoline.BAD_RECORD
    with pytest.raises(TypeError):
        native(bytearray(record))
    assert recorder.calls == []


@needs_trampoline
def test_threads_launching_at_once_each_get_their_own_arguments():
    recorder = Recorder()
    recorder.yield_first = True
    native = recorder.trampoline(256, 0, struct.calcsize(trampoline.record_format("QQqdiii")))
    sent: dict[int, list[bytes]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def worker(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            recorder.set_current(CONTEXT if seed else CONTEXT + 1)  # thread 0: another context
            mine = sent.setdefault(threading.get_ident(), [])
            start.wait()
            for _ in range(300):
                record, _, _ = _random_record(rng, "QQqd")
                status = native(record)
                assert status == (0 if seed else trampoline.FALLBACK)
                if seed:
                    mine.append(record[8:])
        except BaseException as e:  # reported below
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[0]
    received: dict[int, list[bytes]] = {}
    for call in recorder.calls:
        received.setdefault(call.thread, []).append(call.arguments)
    assert received == {ident: records for ident, records in sent.items() if records}
    assert sum(map(len, received.values())) == 5 * 300
    switches = sum(a.thread != b.thread for a, b in zip(recorder.calls, recorder.calls[1:]))
    assert switches > 100, "the threads' launches hardly interleaved: little was tested"


# -- the jit's keyed launcher over the C stand-in libcuda ---------------------------------------
@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler to build the stand-in libcuda")
    path = tmp_path_factory.mktemp("stub") / "libcuda_stub.so"
    subprocess.run([CC, "-O2", "-shared", "-fPIC", "-o", str(path), str(Path(__file__).parent / "libcuda_stub.c")],
                   check=True)
    return load_library(str(path))


class TorchTensor:
    __module__ = "torch"
    is_cuda = True
    dtype = "torch.float32"

    def __init__(self, address: int) -> None:
        self.address = address

    def get_device(self) -> int:
        return 0

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def driver(stub, monkeypatch):
    torch = types.SimpleNamespace(Tensor=TorchTensor,
                                  _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0x99),
                                  cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", torch)
    drv = Driver(stub)
    runtime.use_driver(drv)
    yield drv
    runtime.use_driver(None)


def _no_general_path(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the launch took the general path")
    monkeypatch.setattr(runtime, "launch", refuse)
    monkeypatch.setattr(runtime, "make_current", refuse)


def _last(stub, fmt: str) -> bytes:
    size = ctypes.c_size_t.in_dll(stub, "last_size").value
    assert size == struct.calcsize(fmt)
    return ctypes.string_at(ctypes.addressof(ctypes.c_ubyte.in_dll(stub, "last_args")), size)


def _keyed(values, **meta):
    compiled = K.scale_add_kernel.warmup(np.ones(8, np.float32), np.ones(8, np.float32), np.ones(8, np.float32),
                                         values[3], values[4], backend="cuda", BLOCK=256, **meta)
    names = K.scale_add_kernel.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name == "out")
            for p in compiled.ir.params]
    return compiled, plan, CUDABackend().make_keyed_launcher(compiled, plan, values)


@needs_trampoline
def test_keyed_launch_is_native_and_packs_as_the_general_path(driver, stub, rng, monkeypatch):
    values = [TorchTensor(int(rng.integers(1, 2**48)) * 16) for _ in range(3)] + [2**63 - 1, float("nan")]
    compiled, plan, launch = _keyed(values)
    assert "_native" in launch.__globals__  # the trampoline serves it
    fmt = "@QQQqf3i"
    runtime.make_current(runtime.primary_context(0))
    general_calls = []
    make_current = runtime.make_current
    monkeypatch.setattr(runtime, "make_current", lambda context: general_calls.append(context) or make_current(context))
    for n, alpha in ((2**63 - 1, float("nan")), (-2**63, -0.0), (int(rng.integers(2**31, 2**62)), 3.25)):
        values[3:] = [n, alpha]
        grid = tuple(int(g) for g in rng.integers(1, 2**31, 3))
        before = len(general_calls)
        launch(grid, values)
        assert len(general_calls) == before, "the keyed launch took the general path"
        keyed_bytes = _last(stub, fmt)
        assert list((ctypes.c_uint * 3).in_dll(stub, "last_grid")) == list(grid)
        assert ctypes.c_uint.in_dll(stub, "last_block").value == compiled.threads
        assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x99
        general = CUDABackend().make_launcher(compiled, plan)
        general(grid, values, stream=0x55)
        assert len(general_calls) == before + 1  # the counter sees the general path
        assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x55
        assert _last(stub, fmt) == keyed_bytes
        assert struct.unpack(fmt, keyed_bytes)[:4] == tuple(v.address for v in values[:3]) + (n,)
    launch((1, 1, 1), values, stream=types.SimpleNamespace(cuda_stream=0x1234, device_index=0))
    assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x1234


@tiles.jit
def bf16_after_constexpr(x, BLOCK: tl.constexpr, alpha, n, out):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * alpha, mask=offs < n)


@needs_trampoline
def test_bfloat16_scalars_on_the_native_path(driver, stub, rng, monkeypatch):
    """A bf16 scalar after a constexpr: its position among the kernel's parameters is not its
    position among the arguments."""
    compiled = bf16_after_constexpr.compile(signature={"x": "*fp32", "alpha": "bf16", "n": "i32", "out": "*fp32"},
                                            constexprs={"BLOCK": 16}, backend="cuda")
    plan = [PlannedArg(*p) for p in ((0, "x", True, False), (2, "alpha", False, False),
                                     (3, "n", False, False), (4, "out", True, True))]
    values = [TorchTensor(0x1000), 16, -1.5, 77, TorchTensor(0x3000)]
    launch = launcher.keyed(compiled, CUDABackend()._loaded(compiled), plan, values)
    assert "_native" in launch.__globals__
    runtime.make_current(runtime.primary_context(0))
    _no_general_path(monkeypatch)
    for alpha in (-1.5, 3.140625, float("inf"), -0.0, float(rng.standard_normal())):
        values[2:4] = [alpha, int(rng.integers(-2**31, 2**31))]
        launch((2, 1, 1), values)
        bits = int(np.asarray(alpha, ml_dtypes.bfloat16).view(np.uint16))
        assert struct.unpack("@QHiQ3i", _last(stub, "@QHiQ3i")) == (0x1000, bits, values[3], 0x3000, 2, 1, 1)


@needs_trampoline
def test_a_foreign_current_context_falls_back_and_is_given_back(driver, stub):
    values = [TorchTensor(0x1000), TorchTensor(0x2000), TorchTensor(0x3000), 1000, 2.5]
    _, _, launch = _keyed(values)
    foreign = 0xBEEF
    driver.set_current(foreign)
    launch((3, 1, 1), values)
    assert ctypes.c_void_p.in_dll(stub, "last_context").value == runtime.primary_context(0)
    assert driver.current_context() == foreign  # the general path pushed and popped the kernel's
    seen = []

    def fresh_thread():
        launch((4, 1, 1), values)  # no context current yet: the general path makes it current
        seen.append(ctypes.c_void_p.in_dll(stub, "last_context").value)
        launch((5, 1, 1), values)  # now the native path
        seen.append(ctypes.c_void_p.in_dll(stub, "last_context").value)
    thread = threading.Thread(target=fresh_thread)
    thread.start()
    thread.join()
    assert seen == [runtime.primary_context(0)] * 2


class RecorderDriver(Driver):
    """The stub libcuda for loading and contexts; a ``Recorder`` for the native launch."""

    def __init__(self, lib, recorder: Recorder) -> None:
        super().__init__(lib)
        self.recorder = recorder

    def native_address(self, name: str) -> int:
        calls = {"cuCtxGetCurrent": self.recorder.get_current, "cuLaunchKernel": self.recorder.launch}
        return _address(calls[name]) if name in calls else super().native_address(name)


@needs_trampoline
def test_keyed_launches_from_many_threads_each_get_their_own_arguments_and_stream(stub, monkeypatch):
    recorder = Recorder()
    recorder.yield_first = True
    streams: dict[int, int] = {}
    torch = types.SimpleNamespace(Tensor=TorchTensor,
                                  _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: streams[
                                      threading.get_ident()]),
                                  cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", torch)
    runtime.use_driver(RecorderDriver(stub, recorder))
    try:
        _, _, launch = _keyed([TorchTensor(0x1000), TorchTensor(0x2000), TorchTensor(0x3000), 2**40, 1.5])
        assert "_native" in launch.__globals__
        context = runtime.primary_context(0)
        expected: dict[int, list[tuple[int, bytes]]] = {}
        errors: list[BaseException] = []
        start = threading.Barrier(4)

        def worker(seed: int) -> None:
            try:
                rng = np.random.default_rng(seed)
                ident = threading.get_ident()
                streams[ident] = 0x5000 + seed
                recorder.set_current(context)
                mine = expected.setdefault(ident, [])
                start.wait()
                for _ in range(200):
                    pointers = [int(p) * 16 for p in rng.integers(1, 2**40, 3)]
                    n, alpha = int(rng.integers(2**31, 2**62)), float(np.float32(rng.standard_normal()))
                    grid = tuple(int(g) for g in rng.integers(1, 2**20, 3))
                    launch(grid, [*map(TorchTensor, pointers), n, alpha])
                    mine.append((0x5000 + seed, struct.pack("@QQQqf3i", *pointers, n, alpha, *grid)))
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        received: dict[int, list[tuple[int, bytes]]] = {}
        for call in recorder.calls:
            received.setdefault(call.thread, []).append((call.stream, call.arguments))
        assert received == expected
    finally:
        runtime.use_driver(None)


@needs_trampoline
def test_launch_errors_name_the_kernel(stub, monkeypatch):
    failing = LAUNCH(lambda *args: 700)

    class FailingLaunches(Driver):
        def native_address(self, name: str) -> int:
            return _address(failing) if name == "cuLaunchKernel" else super().native_address(name)

    torch = types.SimpleNamespace(Tensor=TorchTensor,
                                  _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0),
                                  cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", torch)
    runtime.use_driver(FailingLaunches(stub))
    try:
        values = [TorchTensor(0x1000), TorchTensor(0x2000), TorchTensor(0x3000), 1000, 2.5]
        _, _, launch = _keyed(values)
        runtime.make_current(runtime.primary_context(0))
        with pytest.raises(CUDAError, match=r"cuLaunchKernel\(scale_add_kernel, grid=\(9, 1, 1\).*error 700"):
            launch((9, 1, 1), values)
    finally:
        runtime.use_driver(None)


def test_without_the_trampoline_the_ctypes_launch_packs_the_same(driver, stub, monkeypatch):
    values = [TorchTensor(0x1230), TorchTensor(0x4560), TorchTensor(0x7890), -2**63, float("-inf")]
    monkeypatch.setattr(trampoline, "enabled", False)
    _, _, launch = _keyed(values)
    assert "_native" not in launch.__globals__
    runtime.make_current(runtime.primary_context(0))
    launch((6, 5, 4), values, stream=0x42)
    assert struct.unpack("@QQQqf3i", _last(stub, "@QQQqf3i")) == \
        (0x1230, 0x4560, 0x7890, -2**63, float("-inf"), 6, 5, 4)
    assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x42


# -- on a GPU -----------------------------------------------------------------------------------
def _gpu_reason() -> str | None:
    from tiles.backends import registry
    available, why = registry.status("cuda")
    try:
        import torch
    except ImportError:
        return "needs torch for CUDA tensors"
    if not (available and torch.cuda.is_available()):
        return f"no CUDA GPU for tiles and torch: {why}"
    return REASON


@pytest.mark.skipif(_gpu_reason() is not None, reason=str(_gpu_reason()))
def test_gpu_threads_launch_natively_with_their_own_arguments(monkeypatch):
    import torch
    n, block = 4099, 256
    g = torch.Generator(device="cpu").manual_seed(11)
    x, y = torch.randn(n, generator=g).cuda(), torch.randn(n, generator=g).cuda()
    grid = (-(-n // block),)
    K.scale_add_kernel._launches.clear()  # plans built over this driver (other tests swap drivers)
    warm = torch.empty_like(x)
    for _ in range(3):
        K.scale_add_kernel[grid](x, y, warm, n, 1.0, BLOCK=block, backend="cuda")
    entries = [e for e in K.scale_add_kernel._launches.values() if hasattr(e, "launcher")]
    assert any("_native" in getattr(e.launcher, "__globals__", {}) for e in entries)
    general: list[int] = []  # launches that took the general path
    make_current = runtime.make_current
    monkeypatch.setattr(runtime, "make_current", lambda context: general.append(context) or make_current(context))
    outs = [torch.full_like(x, float("nan")) for _ in range(8)]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(50):
                K.scale_add_kernel[grid](x, y, outs[i], n, float(i) - 3.5, BLOCK=block, backend="cuda")
            torch.cuda.current_stream().synchronize()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(general) <= 8, f"{len(general)} of 400 launches took the general path (at most one per new thread)"
    torch.cuda.synchronize()
    for i, out in enumerate(outs):
        torch.testing.assert_close(out, (float(i) - 3.5) * x + y, rtol=1e-6, atol=1e-6)
