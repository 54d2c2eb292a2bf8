"""The CUDA runtime's real ctypes declarations, called on a stand-in libcuda compiled from
``libcuda_stub.c`` (needs a C compiler, no GPU): argument types, the packed argument buffer
``cuLaunchKernel`` receives, per-thread contexts and host-array staging addresses."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import stream_kernels as K

from tiles.backends.base import PlannedArg
from tiles.backends.cuda import CUDABackend, runtime
from tiles.backends.cuda.driver import Driver, load_library
from tiles.core.dtypes import PointerType

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to build the stand-in libcuda")


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    path = tmp_path_factory.mktemp("stub") / "libcuda_stub.so"
    subprocess.run([CC, "-O2", "-shared", "-fPIC", "-o", str(path), str(Path(__file__).parent / "libcuda_stub.c")],
                   check=True)
    lib = load_library(str(path))
    runtime.use_driver(Driver(lib))
    yield lib
    runtime.use_driver(None)


def last_arguments(lib, fmt):
    size = ctypes.c_size_t.in_dll(lib, "last_size").value
    assert size == struct.calcsize(fmt)
    return struct.unpack(fmt, ctypes.string_at(ctypes.addressof(ctypes.c_ubyte.in_dll(lib, "last_args")), size))


class Tensor:
    is_cuda = True

    def __init__(self, address):
        self.address = address

    def get_device(self):
        return 0

    def data_ptr(self):
        return self.address


def _launcher(kernel, values, written, **meta):
    compiled = kernel.warmup(*values, backend="cuda", **meta)
    names = kernel.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name in written)
            for p in compiled.ir.params]
    return CUDABackend().make_launcher(compiled, plan)


def test_tensor_launch_packs_arguments_and_uses_the_stream(stub):
    x = np.ones(8, np.float32)
    launch = _launcher(K.scale_add_kernel, [x, x, x, 1000, 1.5], {"out"}, BLOCK=256)
    launch((4, 1, 1), [Tensor(0x1000), Tensor(0x2000), Tensor(0x3000), 1000, 2.5], stream=0x77)
    assert last_arguments(stub, "@QQQif3i") == (0x1000, 0x2000, 0x3000, 1000, 2.5, 4, 1, 1)
    assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x77
    assert ctypes.c_void_p.in_dll(stub, "last_context").value == runtime.primary_context(0)


def test_a_new_thread_gets_the_context(stub):
    x = np.ones(8, np.float32)
    launch = _launcher(K.scale_add_kernel, [x, x, x, 1000, 1.5], {"out"}, BLOCK=256)
    seen = []

    def worker():
        seen.append(runtime.driver().current_context())
        launch((1, 1, 1), [Tensor(0x1000), Tensor(0x2000), Tensor(0x3000), 1000, 1.0])
        seen.append(ctypes.c_void_p.in_dll(stub, "last_context").value)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [0, runtime.primary_context(0)]


def test_staged_views_reach_the_kernel_at_their_first_element(stub):
    rng = np.random.default_rng(17)
    base = rng.standard_normal((12, 20)).astype(np.float32)
    x, y = base[2:10:2, ::3], base[::-1, 1:9]  # step view; negative-stride view
    before = base.copy()
    es = [s // 4 for s in (*x.strides, *y.strides)]
    launch = _launcher(K.affine2d_kernel, [x, y, 4, 7, *es], {"y_ptr"}, BM=8, BN=8)
    seen = {}
    original = runtime.Staging.finish

    def finish(self):  # before the copies are freed: read what the kernel would read
        x_dev, y_dev = last_arguments(stub, "@QQ6i3i")[:2]
        seen["x00"] = ctypes.c_float.from_address(x_dev).value
        seen["x11"] = ctypes.c_float.from_address(x_dev + 4 * (es[0] + es[1])).value
        seen["y00"] = ctypes.c_float.from_address(y_dev).value
        seen["y10"] = ctypes.c_float.from_address(y_dev + 4 * es[2]).value
        original(self)

    runtime.Staging.finish = finish
    try:
        launch((1, 1, 1), [x, y, 4, 7, *es])
    finally:
        runtime.Staging.finish = original
    assert seen == {"x00": x[0, 0], "x11": x[1, 1], "y00": y[0, 0], "y10": y[1, 0]}
    np.testing.assert_array_equal(base, before)  # the stub's kernel writes nothing: copied back as is


def test_keyed_launcher_passes_grid_block_and_arguments_through_the_real_ctypes_call(stub, monkeypatch):
    """The steady-state launcher declares cuLaunchKernel's ints as c_void_p and reads the current
    context through PyDLL: check what a C function receives."""
    import sys
    import types

    class TorchTensor(Tensor):
        __module__ = "torch"
        is_cuda = True
        dtype = "torch.float32"

    torch = types.SimpleNamespace(Tensor=TorchTensor,
                                  _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0x99),
                                  cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", torch)
    x = np.ones(8, np.float32)
    compiled = K.scale_add_kernel.warmup(x, x, x, 1000, 1.5, backend="cuda", BLOCK=256, num_warps=2)
    names = K.scale_add_kernel.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name == "out")
            for p in compiled.ir.params]
    values = [TorchTensor(0x1000), TorchTensor(0x2000), TorchTensor(0x3000), 1000, 2.5, 256]
    launch = CUDABackend().make_keyed_launcher(compiled, plan, values)

    def general_path(*args, **kwargs):
        raise AssertionError("took the general path")
    monkeypatch.setattr(runtime, "make_current", general_path)
    monkeypatch.setattr(runtime, "launch", general_path)
    launch((5, 6, 7), values)
    assert last_arguments(stub, "@QQQif3i") == (0x1000, 0x2000, 0x3000, 1000, 2.5, 5, 6, 7)
    grid = (ctypes.c_uint * 3).in_dll(stub, "last_grid")
    assert list(grid) == [5, 6, 7]
    assert ctypes.c_uint.in_dll(stub, "last_block").value == 64  # num_warps=2
    assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x99
    assert ctypes.c_void_p.in_dll(stub, "last_context").value == runtime.primary_context(0)
    launch((1, 1, 1), values, stream=0x1234)
    assert ctypes.c_void_p.in_dll(stub, "last_stream").value == 0x1234
