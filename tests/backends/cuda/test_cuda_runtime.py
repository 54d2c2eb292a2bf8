"""The CUDA runtime over a fake libcuda (no GPU needed): which thread, context, device and
stream each launch uses, host-array staging (strided views included), launch overhead."""

from __future__ import annotations

import struct
import sys
import threading
import time
import types

import numpy as np
import pytest
import stream_kernels as K
from fake_libcuda import FakeLibCUDA, FakeTensor

from tiles.backends.base import PlannedArg
from tiles.backends.cuda import CUDABackend, runtime
from tiles.backends.cuda.driver import CUDAError, Driver
from tiles.core.dtypes import PointerType
from tiles.core.errors import LaunchError

N = 1000
BLOCK = 256


def _add_kernel(lib: FakeLibCUDA, arguments: bytes) -> None:
    x, y, out, n, alpha = struct.unpack_from("@QQQif", arguments)
    xs = np.frombuffer(lib.read(x, 4 * n), np.float32)
    ys = np.frombuffer(lib.read(y, 4 * n), np.float32)
    lib.write(out, (np.float32(alpha) * xs + ys).astype(np.float32).tobytes())


def _affine_kernel(lib: FakeLibCUDA, arguments: bytes) -> None:
    x, y, m, n, sxm, sxn, sym, syn = struct.unpack_from("@QQ6i", arguments)
    for i in range(m):
        for j in range(n):
            xa, ya = x + 4 * (i * sxm + j * sxn), y + 4 * (i * sym + j * syn)
            xv = np.frombuffer(lib.read(xa, 4), np.float32)[0]
            yv = np.frombuffer(lib.read(ya, 4), np.float32)[0]
            lib.write(ya, np.float32(2 * xv + yv).tobytes())


@pytest.fixture
def lib():
    fake = FakeLibCUDA(devices=2)
    fake.kernels.update(scale_add_kernel=_add_kernel, affine2d_kernel=_affine_kernel)
    runtime.use_driver(Driver(fake))
    yield fake
    runtime.use_driver(None)


def _launcher(kernel, values, written, **meta):
    """The backend's launcher for ``kernel`` compiled (to PTX, no GPU) for these values."""
    compiled = kernel.warmup(*values, backend="cuda", **meta)
    names = kernel.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name in written)
            for p in compiled.ir.params]
    return CUDABackend().make_launcher(compiled, plan)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def _tensors(lib, x, y, device=0):
    return (FakeTensor(lib, x.tobytes(), device), FakeTensor(lib, y.tobytes(), device),
            FakeTensor(lib, np.full(N, np.nan, np.float32).tobytes(), device))


def _result(lib, tensor):
    return np.frombuffer(lib.read(tensor.data_ptr(), 4 * N), np.float32)


def test_launches_from_new_threads_make_the_primary_context_current(lib):
    x, y = _inputs(1)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.5], {"out"}, BLOCK=BLOCK)
    errors = []

    def worker(seed):
        try:
            xt, yt, out = _tensors(lib, *_inputs(seed))
            launch((4, 1, 1), [xt, yt, out, N, 1.5])
            xs, ys = _inputs(seed)
            np.testing.assert_array_equal(_result(lib, out), np.float32(1.5) * xs + ys)
        except Exception as e:  # reported below: an exception in a thread is otherwise lost
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(10 + i,), name=f"worker{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert {launch.thread for launch in lib.launches} == {f"worker{i}" for i in range(4)}
    assert {launch.context for launch in lib.launches} == {lib.primary(0)}
    assert lib.modules_loaded == [lib.primary(0)]  # loaded once, used by every thread


def test_tensors_on_device_1_run_in_device_1s_context(lib):
    x, y = _inputs(2)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 2.0], {"out"}, BLOCK=BLOCK)
    xt, yt, out = _tensors(lib, x, y, device=1)
    launch((4, 1, 1), [xt, yt, out, N, 2.0])
    x0, y0, out0 = _tensors(lib, x, y, device=0)
    launch((4, 1, 1), [x0, y0, out0, N, 2.0])
    assert [launch.context for launch in lib.launches] == [lib.primary(1), lib.primary(0)]
    assert lib.modules_loaded == [lib.primary(1), lib.primary(0)]  # once per context
    np.testing.assert_array_equal(_result(lib, out), np.float32(2.0) * x + y)


def test_mixed_devices_are_refused(lib):
    x, y = _inputs(3)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 2.0], {"out"}, BLOCK=BLOCK)
    xt, yt, _ = _tensors(lib, x, y, device=0)
    _, _, out = _tensors(lib, x, y, device=1)
    with pytest.raises(LaunchError, match="different CUDA devices.*one device"):
        launch((4, 1, 1), [xt, yt, out, N, 2.0])


class TorchStream:
    def __init__(self, handle, device):
        self.cuda_stream, self.device_index = handle, device


class ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x5151)


@pytest.mark.parametrize("stream,handle", [(0x1234, 0x1234), (TorchStream(0xBEEF, 0), 0xBEEF),
                                           (ProtocolStream(), 0x5151), (None, 0)])
def test_stream_argument(lib, stream, handle, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    x, y = _inputs(4)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    launch((4, 1, 1), [*_tensors(lib, x, y), N, 1.0], stream=stream)
    assert lib.launches[-1].stream == handle


def test_stream_of_another_device_is_refused(lib):
    x, y = _inputs(5)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    with pytest.raises(LaunchError, match="belongs to cuda:1.*cuda:0"):
        launch((4, 1, 1), [*_tensors(lib, x, y), N, 1.0], stream=TorchStream(7, 1))


def test_default_is_torchs_current_stream_of_the_device(lib, monkeypatch):
    fake_torch = types.ModuleType("torch")
    fake_torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 1)
    fake_torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0xA000 + device)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    x, y = _inputs(6)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    launch((4, 1, 1), [*_tensors(lib, x, y, device=1), N, 1.0])
    assert lib.launches[-1].stream == 0xA001
    out = np.full(N, np.nan, np.float32)
    launch((4, 1, 1), [x, y, out, N, 1.0])  # host arrays: torch's current device (1), its stream
    assert (lib.launches[-1].context, lib.launches[-1].stream) == (lib.primary(1), 0xA001)
    assert {stream for _, stream in lib.copies} == {0xA001}  # copies on the launch's stream too
    np.testing.assert_array_equal(out, x + y)


def test_a_foreign_current_context_is_restored(lib):
    x, y = _inputs(7)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    lib.cuCtxSetCurrent(0x999)  # e.g. pycuda.autoinit's own context
    launch((4, 1, 1), [*_tensors(lib, x, y), N, 1.0])
    assert lib.launches[-1].context == lib.primary(0)
    assert lib.current() == 0x999


def test_host_arrays_and_strided_views_are_staged(lib):
    rng = np.random.default_rng(8)
    x_base = rng.standard_normal((20, 30)).astype(np.float32)
    y_base = rng.standard_normal((24, 40)).astype(np.float32)
    x, y = x_base[2:14:2, 1:25:3].T, y_base[1:9, :30:5]  # 8 x 6 views: transposed/step, step
    want = y_base.copy()
    want[1:9, :30:5] += 2 * x
    es = [s // 4 for s in (*x.strides, *y.strides)]
    launch = _launcher(K.affine2d_kernel, [x, y, 8, 6, *es], {"y_ptr"}, BM=8, BN=8)
    before = set(lib.memory)
    launch((1, 1, 1), [x, y, 8, 6, *es])
    np.testing.assert_array_equal(y_base, want)
    assert set(lib.memory) == before  # every staging copy freed
    assert [d for d, _ in lib.copies] == ["HtoD", "HtoD", "DtoH"]  # the read-only view is not copied back


def test_negative_strides_pass_the_first_elements_address(lib):
    rng = np.random.default_rng(9)
    x_base = rng.standard_normal((6, 8)).astype(np.float32)
    y_base = rng.standard_normal((6, 8)).astype(np.float32)
    x, y = x_base[::-1], y_base[:, ::-1]
    want = y_base.copy()
    want[:, ::-1] += 2 * x
    es = [s // 4 for s in (*x.strides, *y.strides)]
    launch = _launcher(K.affine2d_kernel, [x, y, 6, 8, *es], {"y_ptr"}, BM=8, BN=8)
    launch((1, 1, 1), [x, y, 6, 8, *es])
    np.testing.assert_array_equal(y_base, want)


def test_integer_out_of_range_is_a_launch_error(lib):
    x, y = _inputs(10)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    with pytest.raises(LaunchError, match="does not fit"):
        launch((4, 1, 1), [*_tensors(lib, x, y), 2**40, 1.0])


def test_driver_errors_name_the_call(lib):
    lib.cuLaunchKernel = lambda *a: 701  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    x, y = _inputs(11)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    with pytest.raises(CUDAError, match="cuLaunchKernel.*701"):
        launch((4, 1, 1), [*_tensors(lib, x, y), N, 1.0])


def test_launch_overhead_of_the_tensor_path(lib, monkeypatch):
    """Repeated launches with torch-style tensors reach the driver once each and load nothing again;
    the Python cost per launch is printed (speed is measured by benchmarks/launch_overhead.py)."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    lib.kernels.clear()
    x, y = _inputs(12)
    launch = _launcher(K.scale_add_kernel, [x, y, x, N, 1.0], {"out"}, BLOCK=BLOCK)
    args = [*_tensors(lib, x, y), N, 1.0]
    launch((4, 1, 1), args)
    loaded, before = dict(lib.kernels), len(lib.launches)
    count = 2000
    start = time.perf_counter()
    for _ in range(count):
        launch((4, 1, 1), args)
    per_launch = (time.perf_counter() - start) / count
    print(f"launch path over the fake driver: {per_launch * 1e6:.1f} us")
    assert len(lib.launches) - before == count
    assert dict(lib.kernels) == loaded
    assert all(launch.grid == (4, 1, 1) for launch in lib.launches[before:])


def test_driver_questions_of_the_backend(lib):
    backend = CUDABackend()
    props = backend.device_properties(1)
    assert set(props) == set(runtime.PROPERTY_ATTRIBUTES)
    backend.set_current_device(1)
    assert lib.current() == lib.primary(1)
    assert backend.current_device() == 1
    assert backend.current_stream() == 0
    assert runtime.device_arch(1) == "sm_90a"
