"""The ROCm runtime's device, stream and staging logic over a fake hip module (no ROCm needed)."""

from __future__ import annotations

import ctypes
import threading
import types

import numpy as np
import pytest

from tiles.backends.base import LaunchArg
from tiles.backends.rocm import runtime
from tiles.core.errors import LaunchError

SUCCESS, NOT_READY = 0, 600


class FakeHip:
    """Per-thread current device, host-visible "device" memory (malloc'd bytes), events."""

    hipError_t = types.SimpleNamespace(hipSuccess=SUCCESS, hipErrorNotReady=NOT_READY)  # noqa: N815 (HIP names)
    hipEventDisableTiming = 2  # noqa: N815

    def __init__(self):
        self.local = threading.local()
        self.set_calls = []
        self.blocks = {}
        self.copy_streams = []
        self.polls = 0

    def hipGetDevice(self):
        return SUCCESS, getattr(self.local, "device", 0)

    def hipSetDevice(self, device):
        self.set_calls.append(device)
        self.local.device = device
        return SUCCESS

    def hipMalloc(self, nbytes):
        block = ctypes.create_string_buffer(nbytes)
        self.blocks[ctypes.addressof(block)] = block
        return SUCCESS, ctypes.addressof(block)

    def hipFree(self, address):
        del self.blocks[address]
        return SUCCESS

    def hipMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self.copy_streams.append(stream)
        ctypes.memmove(dst, src, nbytes)
        return SUCCESS

    def hipMemcpyDtoH(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return SUCCESS

    def hipEventCreateWithFlags(self, flags):
        return SUCCESS, object()

    def hipEventRecord(self, event, stream):
        return SUCCESS

    def hipEventQuery(self, event):
        self.polls += 1
        return NOT_READY if self.polls % 3 else SUCCESS

    def hipEventDestroy(self, event):
        return SUCCESS


@pytest.fixture
def hip(monkeypatch):
    fake = FakeHip()
    monkeypatch.setattr(runtime, "hip", lambda: fake)
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    return fake


class Tensor:
    is_cuda = True

    def __init__(self, device):
        self.device_index = device

    def get_device(self):
        return self.device_index


def test_on_device_switches_and_restores(hip):
    with runtime.OnDevice(1):
        assert hip.hipGetDevice()[1] == 1
    assert hip.hipGetDevice()[1] == 0
    with runtime.OnDevice(0):  # already current: no hipSetDevice
        pass
    assert hip.set_calls == [1, 0]


def test_launch_device_follows_the_arguments(hip):
    args = [LaunchArg("x", Tensor(1), True), LaunchArg("n", 3, False)]
    assert runtime.launch_device(args) == 1
    assert runtime.launch_device([LaunchArg("x", np.zeros(2), True)]) == 0  # host arrays: current device
    with pytest.raises(LaunchError, match="different devices.*one device"):
        runtime.launch_device([LaunchArg("x", Tensor(0), True), LaunchArg("y", Tensor(1), True)])


def test_strided_views_are_staged_on_the_stream_and_written_back(hip):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((10, 12)).astype(np.float32)
    view = base[1:9:2, ::-3]  # step and negative stride
    original = base.copy()
    staging = runtime.ArgumentStaging(stream=0x77)
    address = staging.device_address(LaunchArg("y", view, True, True))
    first = np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctypes.c_float)), (1,))
    assert first[0] == view[0, 0]  # the address of the view's first element, inside the span
    lo = address - staging.buffers[0].span.offset
    span = np.ctypeslib.as_array(ctypes.cast(lo, ctypes.POINTER(ctypes.c_uint8)), (staging.buffers[0].span.nbytes,))
    elements = np.ndarray(view.shape, np.float32, buffer=span, offset=staging.buffers[0].span.offset,
                          strides=view.strides)
    elements *= -2  # what a kernel writing y = -2 * y would leave on the device
    staging.finish()
    want = original.copy()
    want[1:9:2, ::-3] *= -2
    np.testing.assert_array_equal(base, want)
    assert hip.copy_streams == [0x77] and not hip.blocks  # copied on the stream, then freed
