"""The host side of TMA (no GPU): the ``cuTensorMapEncodeTiled`` arguments of each tensor map
(``cuda/tensor_map.py``), and the launcher's choice between the kernel with TMA and the one
without (``cuda/tma_launch.py``), over fake drivers."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from test_tma import desc_copy

from tiles.backends.base import PlannedArg
from tiles.backends.cuda import tensor_map
from tiles.backends.cuda.hopper.tma_spec import MapSpec, Source

# ---------------------------------------------------------------- host encoding

SPEC = MapSpec(base=0, dtype="float16", itemsize=2, shape=(Source(1), Source(2)),
               strides=(Source(3), Source(None, 1)), box=(64, 32))


def test_encode_arguments_field_by_field():
    args = tensor_map.encode_arguments(SPEC, [None, 100, 64, 72], 0x7000_0000_1000)
    assert args == tensor_map.EncodeArguments(
        data_type=6, rank=2, address=0x7000_0000_1000, dims=(64, 100), byte_strides=(144,), box=(32, 64),
        element_strides=(1, 1), interleave=0, swizzle=0, l2_promotion=2, oob_fill=0)


@pytest.mark.parametrize("swizzle,mode", [(128, 3), (64, 2), (32, 1)])
def test_encode_arguments_swizzle(swizzle, mode):
    spec = MapSpec(0, "float16", 2, SPEC.shape, SPEC.strides, (64, swizzle // 2), swizzle)
    args = tensor_map.encode_arguments(spec, [None, 100, 64, 72], 0x1000)
    assert args is not None and args.swizzle == mode and args.box == (swizzle // 2, 64)
    too_wide = MapSpec(0, "float16", 2, SPEC.shape, SPEC.strides, (64, swizzle), swizzle)
    assert tensor_map.encode_arguments(too_wide, [None, 100, 64, 72], 0x1000) is None


@pytest.mark.parametrize("values,address,why", [
    ([None, 100, 64, 72], None, "host memory"),
    ([None, 100, 64, 72], 0x1008, "base not 16-byte aligned"),
    ([None, 100, 64, 71], 0x1000, "row stride 142 bytes"),
    ([None, 100, 64, 0], 0x1000, "zero stride"),
    ([None, 100, 64, -72], 0x1000, "negative stride"),
    ([None, 0, 70, 72], 0x1000, "empty dimension"),
    ([None, 100, 2 ** 32 + 1, 72], 0x1000, "dimension over 2**32"),
    ([None, 100, 64, 2 ** 40], 0x1000, "stride of 2**41 bytes"),
])
def test_encode_arguments_refuses_what_tma_cannot_describe(values, address, why):
    assert tensor_map.encode_arguments(SPEC, values, address) is None, why


@pytest.mark.parametrize("dtype,itemsize,rows,cols,row_length,fits", [
    ("float16", 2, 295, 255, 272, False),  # the H200's case: column 255 was written
    ("float16", 2, 295, 256, 272, True),
    ("float16", 2, 295, 264, 272, True),
    ("float32", 4, 7, 9, 16, False),
    ("float32", 4, 7, 12, 16, True),
    ("int8", 1, 3, 40, 64, False),
    ("int8", 1, 3, 48, 64, True),
])
def test_rows_must_end_on_a_16_byte_chunk(dtype, itemsize, rows, cols, row_length, fits):
    """A TMA store writes whole 16-byte chunks of a row, so a window of a wider tensor whose rows
    end inside a chunk would be written past its edge: its map is refused (the launch takes the
    kernel without TMA).  Where it fits, the fields are the window's: innermost size first, the
    tensor's row length as the byte stride."""
    box = (8, 16 // itemsize)
    spec = MapSpec(0, dtype, itemsize, (Source(1), Source(2)), (Source(3), Source(None, 1)), box)
    args = tensor_map.encode_arguments(spec, [None, rows, cols, row_length], 0x7000_0000_1000)
    if not fits:
        assert args is None
        return
    assert args == tensor_map.EncodeArguments(
        data_type=tensor_map.DATA_TYPES[dtype], rank=2, address=0x7000_0000_1000, dims=(cols, rows),
        byte_strides=(row_length * itemsize,), box=(16 // itemsize, 8), element_strides=(1, 1))


def test_one_dimensional_maps_end_on_a_16_byte_chunk():
    spec = MapSpec(0, "float16", 2, (Source(1),), (Source(None, 1),), (64,))
    assert tensor_map.encode_arguments(spec, [None, 1001], 0x1000) is None
    assert tensor_map.encode_arguments(spec, [None, 1000], 0x1000).dims == (1000,)


class FakeEncoder:
    """Records cuTensorMapEncodeTiled's arguments and writes a recognisable map."""

    def __init__(self, status=0):
        self.status, self.calls = status, []

    def cuTensorMapEncodeTiled(self, out, dtype, rank, address, dims, strides, box, estrides, *modes):  # noqa: N802
        assert out.value % 64 == 0, "CUtensorMap must be 64-byte aligned"
        self.calls.append(dict(dtype=dtype, rank=rank, address=address.value, dims=list(dims),
                               strides=list(strides), box=list(box), estrides=list(estrides), modes=modes))
        ctypes.memmove(out.value, bytes(range(128)), 128)
        return self.status


def test_encode_passes_every_argument():
    lib = FakeEncoder()
    args = tensor_map.encode_arguments(SPEC, [None, 100, 64, 72], 0x7000_0000_1000)
    assert tensor_map.encode(lib, args) == bytes(range(128))
    assert lib.calls == [dict(dtype=6, rank=2, address=0x7000_0000_1000, dims=[64, 100], strides=[144],
                              box=[32, 64], estrides=[1, 1], modes=(0, 0, 2, 0))]
    assert tensor_map.encode(FakeEncoder(status=1), args) is None


def test_spec_json_round_trip():
    rows = Source(op="mul", bits=32, args=(Source(1), Source(op="add", bits=32, args=(Source(2), Source(None, 3)))))
    spec = MapSpec(0, "bfloat16", 2, (rows, Source(None, 64)), (Source(None, 64), Source(None, 1)), (64, 64), 128)
    assert MapSpec.from_json(SPEC.to_json()) == SPEC and MapSpec.from_json(spec.to_json()) == spec


def test_computed_sizes_wrap_as_the_kernel_computes_them():
    rows = Source(op="mul", bits=32, args=(Source(0), Source(op="sub", bits=32, args=(Source(1), Source(None, 2)))))
    assert rows.of([7, 12]) == 70
    assert rows.of([2 ** 20, 2 ** 12 + 2]) == 0  # 2**32 wraps to 0 in int32
    assert Source(op="mul", bits=32, args=(Source(0), Source(0))).of([50000]) == 50000 ** 2 - 2 ** 32


# ---------------------------------------------------------------- the launcher's choice

class FakeDriver:
    def __init__(self):
        self.lib, self.allocs, self.copies = FakeEncoder(), [], []
        self.lib.cuStreamSynchronize = lambda stream: 0

    def alloc(self, n):
        self.allocs.append(n)
        return 0xD000 + 0x100 * len(self.allocs)

    def copy_to_device(self, address, host, n, stream):
        self.copies.append((address, ctypes.string_at(host, n)))

    def check(self, status, what):
        assert status == 0, what

    def pop(self):
        raise AssertionError("nothing was pushed")


class DeviceArray:
    def __init__(self, address):
        self.address = address


def test_launcher_appends_the_maps_and_falls_back(monkeypatch):
    from tiles.backends.base import CompiledKernel
    from tiles.backends.cuda import tma_launch
    drv = FakeDriver()
    monkeypatch.setattr(tma_launch.runtime, "driver", lambda: drv)
    monkeypatch.setattr(tma_launch.runtime, "device_address",
                        lambda a: (a.value.address, 0, 7) if isinstance(a.value, DeviceArray) else None)
    monkeypatch.setattr(tma_launch.runtime, "make_current", lambda context: False)
    monkeypatch.setattr(tma_launch.runtime, "stream_handle", lambda stream, device: 0)
    monkeypatch.setattr(tma_launch, "_TABLE", tensor_map.MapTable())
    compiled = CompiledKernel("k", None, None)  # type: ignore[arg-type]
    compiled.tensor_maps = (SPEC.to_json(),)
    launched = []

    def make(kernel, plan):
        return lambda grid, values, stream=None: launched.append((kernel, [values[i] for i, *_ in plan]))
    fallback = CompiledKernel("k-without-tma", None, None)  # type: ignore[arg-type]
    plan = [PlannedArg(*p) for p in ((0, "x", True, False), (1, "M", False, False),
                                     (2, "N", False, False), (3, "s", False, False))]
    launcher = tma_launch.with_tensor_maps(compiled, plan, make, lambda: fallback)
    x = DeviceArray(0x7000_0000_1000)
    launcher((1, 1, 1), [x, 100, 64, 72])
    launcher((1, 1, 1), [x, 100, 64, 72])  # the same tensors: no second encoding or copy
    assert launched == [(compiled, [x, 100, 64, 72, 0xD100])] * 2
    assert len(drv.lib.calls) == 1 and drv.copies == [(0xD100, bytes(range(128)))]
    launcher((1, 1, 1), [x, 100, 64, 71])  # a row of 142 bytes: the kernel without TMA
    host = np.zeros(4)
    launcher((1, 1, 1), [host, 100, 64, 72])  # host memory: the kernel without TMA
    launcher((1, 1, 1), [x, 100, 63, 72])  # rows of 126 bytes end inside a 16-byte chunk: without TMA
    launcher((1, 1, 1), [x, 100, 63, 72])  # decided once
    assert launched[2:] == [(fallback, [x, 100, 64, 71]), (fallback, [host, 100, 64, 72]),
                            (fallback, [x, 100, 63, 72]), (fallback, [x, 100, 63, 72])]
    assert len(drv.lib.calls) == 1


def test_persistent_kernels_launch_one_program_per_sm_with_the_grid(monkeypatch):
    """``compiled.persistent``: at most one program per SM along x, the kernel's grid as
    three more values after the maps' address; an empty grid launches nothing, and a grid whose
    program counter would wrap (2**31 programs) runs the kernel without TMA."""
    from tiles.backends.base import CompiledKernel
    from tiles.backends.cuda import tma_launch
    drv = FakeDriver()
    monkeypatch.setattr(tma_launch.runtime, "driver", lambda: drv)
    monkeypatch.setattr(tma_launch.runtime, "device_address",
                        lambda a: (a.value.address, 0, 7) if isinstance(a.value, DeviceArray) else None)
    monkeypatch.setattr(tma_launch.runtime, "make_current", lambda context: False)
    monkeypatch.setattr(tma_launch.runtime, "stream_handle", lambda stream, device: 0)
    monkeypatch.setattr(tma_launch.runtime, "multiprocessor_count", lambda device: 132)
    monkeypatch.setattr(tma_launch, "_TABLE", tensor_map.MapTable())
    compiled = CompiledKernel("k", None, None)  # type: ignore[arg-type]
    compiled.tensor_maps, compiled.persistent = (SPEC.to_json(),), True
    launched = []

    def make(kernel, plan):
        return lambda grid, values, stream=None: launched.append((kernel, grid, [values[i] for i, *_ in plan]))
    fallback = CompiledKernel("k-without-tma", None, None)  # type: ignore[arg-type]
    plan = [PlannedArg(*p) for p in ((0, "x", True, False), (1, "M", False, False),
                                     (2, "N", False, False), (3, "s", False, False))]
    launcher = tma_launch.with_tensor_maps(compiled, plan, make, lambda: fallback)
    x = DeviceArray(0x7000_0000_1000)
    launcher((32, 128, 1), [x, 100, 64, 72])
    launcher((3, 5, 1), [x, 100, 64, 72])
    launcher((0, 5, 1), [x, 100, 64, 72])
    launcher((2**16, 2**15, 1), [x, 100, 64, 72])
    assert launched == [(compiled, (132, 1, 1), [x, 100, 64, 72, 0xD100, 32, 128, 1]),
                        (compiled, (15, 1, 1), [x, 100, 64, 72, 0xD100, 3, 5, 1]),
                        (fallback, (2**16, 2**15, 1), [x, 100, 64, 72])]


# ---------------------------------------------------------------- the real launchers over a fake libcuda


@pytest.fixture
def fake_lib(monkeypatch):
    from fake_libcuda import FakeLibCUDA

    from tiles.backends.cuda import runtime, tma_launch
    from tiles.backends.cuda.driver import Driver

    class WithTMA(FakeLibCUDA):
        encodes: list = []

        def cuTensorMapEncodeTiled(self, out, dtype, rank, address, dims, strides, box, *rest):  # noqa: N802
            self.encodes.append((dtype, rank, address.value, list(dims[:rank]), list(strides[:rank - 1]),
                                 list(box[:rank])))
            ctypes.memmove(out.value, bytes([len(self.encodes)]) * 128, 128)
            return 0

        def cuStreamSynchronize(self, stream):  # noqa: N802
            return 0

    fake = WithTMA(devices=1)
    fake.encodes = []
    runtime.use_driver(Driver(fake))
    monkeypatch.setattr(tma_launch, "_TABLE", tensor_map.MapTable())
    yield fake
    runtime.use_driver(None)


@pytest.mark.parametrize("keyed", [False, True])
def test_launchers_pass_the_maps_and_fall_back(tma_on, fake_lib, keyed):
    from fake_libcuda import FakeTensor

    from tiles.backends.cuda import CUDABackend
    from tiles.core.dtypes import PointerType
    m, n = 64, 40
    x = np.zeros((m, 48), np.float16)
    values = [x, np.zeros_like(x), m, n, 48, 48, 0, 0]
    compiled = desc_copy.warmup(*values, backend="cuda", BM=32, BN=8, num_warps=4)
    assert len(compiled.metadata["tensor_maps"]) == 2
    names = desc_copy.arg_names
    plan = [PlannedArg(names.index(p.name), p.name, isinstance(p.value.type.dtype, PointerType), p.name == "out_ptr")
            for p in compiled.ir.params]
    tensors = [FakeTensor(fake_lib, x.tobytes()), FakeTensor(fake_lib, x.tobytes())]
    on_device = [*tensors, *values[2:]]
    backend = CUDABackend()
    launcher = (backend.make_keyed_launcher(compiled, plan, on_device) if keyed
                else backend.make_launcher(compiled, plan))
    launcher((2, 5, 1), on_device)
    launcher((2, 5, 1), on_device)
    *params, maps, gx, gy, gz = struct.unpack("@QQ6iQ3i", fake_lib.launches[0].arguments)
    assert params == [tensors[0].address, tensors[1].address, m, n, 48, 48, 0, 0] and (gx, gy, gz) == (2, 5, 1)
    assert fake_lib.read(maps, 256) == bytes([1]) * 128 + bytes([2]) * 128
    assert fake_lib.launches[1].arguments == fake_lib.launches[0].arguments  # encoded once
    assert fake_lib.encodes == [(6, 2, tensors[0].address, [n, m], [96], [8, 32]),
                                (6, 2, tensors[1].address, [n, m], [96], [8, 32])]
    launcher((2, 5, 1), [*tensors, m, n, 47, 48, 0, 0])  # a 94-byte row: the kernel without TMA
    assert len(fake_lib.launches[2].arguments) == struct.calcsize("@QQ6i3i")
    assert len(fake_lib.modules_loaded) == 2
