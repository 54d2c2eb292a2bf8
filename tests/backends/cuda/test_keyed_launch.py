"""The steady-state CUDA launch (``kernel[grid](...)`` through the jit's binder key and
``backends/cuda/launch/launcher.keyed``) over a fake libcuda and a fake torch: no GPU needed.

Checks what the short path must keep from the general one: the primary context of the
tensors' device in any thread, torch's current stream asked on every launch (the capturing
stream under CUDA graph capture), ``stream=``, and that host arrays are refused, before any
allocation, while the launch's stream captures a graph."""

from __future__ import annotations

import struct
import sys
import threading
import types

import numpy as np
import pytest
from fake_libcuda import FakeLibCUDA, FakeTensor

import tiles
import tiles.language as tl
from tiles.backends.cuda import runtime
from tiles.backends.cuda.driver import Driver
from tiles.core.errors import LaunchError
from tiles.runtime.jit import FastLaunch

N = 1000
BLOCK = 256


@tiles.jit
def keyed_scale_add(x, y, out, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def _run_scale_add(lib: FakeLibCUDA, arguments: bytes) -> None:
    x, y, out, n, alpha = struct.unpack_from("@QQQif", arguments)
    xs = np.frombuffer(lib.read(x, 4 * n), np.float32)
    ys = np.frombuffer(lib.read(y, 4 * n), np.float32)
    lib.write(out, (np.float32(alpha) * xs + ys).astype(np.float32).tobytes())


class Tensor(FakeTensor):
    """A float32 torch CUDA tensor, for the fake torch below."""

    __module__ = "torch"
    dtype = "torch.float32"


class Streams:
    """torch's current stream per device, as the fake torch reports it."""

    def __init__(self) -> None:
        self.current = {0: 0x100, 1: 0x101}

    def raw(self, device: int) -> int:
        return self.current[device]


@pytest.fixture
def lib(monkeypatch):
    fake = FakeLibCUDA(devices=2)
    fake.kernels["keyed_scale_add"] = _run_scale_add
    runtime.use_driver(Driver(fake))
    streams = Streams()
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=streams.raw)  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    fake.streams = streams
    keyed_scale_add._launches.clear()  # launch plans hold the driver they were built on
    yield fake
    runtime.use_driver(None)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def _tensors(lib, x, y, device=0):
    return (Tensor(lib, x.tobytes(), device), Tensor(lib, y.tobytes(), device),
            Tensor(lib, np.full(N, np.nan, np.float32).tobytes(), device))


def _result(lib, tensor):
    return np.frombuffer(lib.read(tensor.data_ptr(), 4 * N), np.float32)


def _launch(*args, **kwargs):
    keyed_scale_add[(-(-N // BLOCK),)](*args, BLOCK=BLOCK, backend="cuda", **kwargs)


def _warm(lib, device=0):
    """Launch until the binder's key serves the launch (the first launches build it)."""
    x, y = _inputs(99)
    for _ in range(3):
        _launch(*_tensors(lib, x, y, device), N, 1.0)


def _no_general_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the launch took the general path")
    monkeypatch.setattr(runtime, "launch", refuse)
    monkeypatch.setattr(runtime, "make_current", refuse)


def test_steady_launches_are_keyed_and_ask_torch_for_the_stream_each_time(lib, monkeypatch):
    _warm(lib)
    assert any(isinstance(e, FastLaunch) for e in keyed_scale_add._launches.values())
    _no_general_path(monkeypatch)
    for seed, stream in ((1, 0x100), (2, 0xCAB), (3, 0x100)):
        lib.streams.current[0] = stream  # e.g. torch.cuda.stream(s) or a graph capture began
        x, y = _inputs(seed)
        xt, yt, out = _tensors(lib, x, y)
        _launch(xt, yt, out, N, 1.5)
        np.testing.assert_array_equal(_result(lib, out), np.float32(1.5) * x + y)
        assert lib.launches[-1].stream == stream
        assert lib.launches[-1].context == lib.primary(0)
        assert lib.launches[-1].grid == (4, 1, 1)


def test_stream_argument_on_the_keyed_path(lib, monkeypatch):
    _warm(lib)
    _no_general_path(monkeypatch)
    x, y = _inputs(4)
    _launch(*_tensors(lib, x, y), N, 2.0, stream=0x77)
    assert lib.launches[-1].stream == 0x77
    side = types.SimpleNamespace(cuda_stream=0x78, device_index=0)
    _launch(*_tensors(lib, x, y), N, 2.0, stream=side)
    assert lib.launches[-1].stream == 0x78
    with pytest.raises(LaunchError, match="belongs to cuda:1"):
        _launch(*_tensors(lib, x, y), N, 2.0, stream=types.SimpleNamespace(cuda_stream=0x79, device_index=1))


def test_a_new_thread_and_a_foreign_current_context(lib):
    _warm(lib)
    x, y = _inputs(5)
    results = {}

    def worker():
        try:
            xt, yt, out = _tensors(lib, x, y)
            _launch(xt, yt, out, N, -0.5)  # no context current in this thread yet
            _launch(xt, yt, out, N, -0.5)
            results["out"] = _result(lib, out)
        except Exception as e:  # reported below
            results["error"] = e

    thread = threading.Thread(target=worker, name="keyed-worker")
    thread.start()
    thread.join()
    assert "error" not in results, results.get("error")
    np.testing.assert_array_equal(results["out"], np.float32(-0.5) * x + y)
    assert {(la.thread, la.context) for la in lib.launches if la.thread == "keyed-worker"} == \
        {("keyed-worker", lib.primary(0))}
    foreign = 0xF00D
    lib.cuCtxPushCurrent_v2(foreign)  # another library's context is current in this thread
    try:
        _launch(*_tensors(lib, x, y), N, 1.0)
        assert lib.launches[-1].context == lib.primary(0)
        assert lib.current() == foreign  # given back after the launch
    finally:
        lib.local.stack.pop()


def test_tensors_on_device_1_have_their_own_key(lib):
    _warm(lib, device=1)
    _warm(lib, device=0)
    x, y = _inputs(6)
    xt, yt, out = _tensors(lib, x, y, device=1)
    _launch(xt, yt, out, N, 3.0)
    assert (lib.launches[-1].context, lib.launches[-1].stream) == (lib.primary(1), 0x101)
    np.testing.assert_array_equal(_result(lib, out), np.float32(3.0) * x + y)
    x0, y0, out0 = _tensors(lib, x, y, device=0)
    _launch(x0, y0, out0, N, 3.0)
    assert (lib.launches[-1].context, lib.launches[-1].stream) == (lib.primary(0), 0x100)


def test_mixed_devices_still_refused(lib):
    _warm(lib)
    x, y = _inputs(7)
    xt, yt, _ = _tensors(lib, x, y, device=0)
    _, _, out = _tensors(lib, x, y, device=1)
    with pytest.raises(LaunchError, match="different CUDA devices"):
        _launch(xt, yt, out, N, 1.0)


def test_host_arrays_refused_while_the_stream_captures(lib):
    x, y = _inputs(8)
    out = np.zeros_like(x)
    _launch(x, y, out, N, 2.0)  # compiled, and staged normally outside a capture
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)
    lib.capturing.add(0x100)
    allocated = len(lib.memory)
    with pytest.raises(LaunchError, match="capturing a CUDA graph.*torch CUDA tensor"):
        _launch(x, y, out, N, 2.0)
    assert len(lib.memory) == allocated  # nothing allocated, nothing copied
