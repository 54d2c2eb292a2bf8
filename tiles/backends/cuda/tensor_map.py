"""Host side of TMA: the ``CUtensorMap`` of each tensor descriptor a kernel copies with TMA.

The lowering (``hopper/tma.py``) records one ``MapSpec`` per distinct descriptor:
which kernel parameter holds the base address, where each dimension's size and stride comes
from (a parameter or a constant), the element type and the box (the descriptor's
``block_shape``).  At launch, ``encode_arguments`` turns a spec and the launch's values into
the arguments of ``cuTensorMapEncodeTiled`` (innermost dimension first, strides in bytes), or
None when TMA cannot describe that tensor (a base not on the device or not 16-byte aligned, a
size outside [1, 2**32], a stride that is not a positive multiple of 16 bytes below 2**40, an
innermost size that is not a whole number of 16-byte chunks): the launch then takes the kernel
compiled without TMA.

The last rule is not the driver's (it encodes such a map) but the hardware's: a TMA store
writes whole 16-byte chunks of a row, so where a row's extent ends inside a chunk it also writes
the elements up to that chunk's end, past the descriptor's edge (seen on the H200 with a
``TensorDescriptor`` window of 255 fp16 columns in rows of 272: column 255 was written; Triton's
issue 11583 reports the same on the H100).  The extent can end inside a chunk only where the
rows are longer than the extent (a window of a wider tensor) or for 1-D tensors.  Loads are held
to the same rule: their zero fill at such an edge has not been measured.

``MapTable`` encodes the maps through the driver and keeps them (128 bytes each) in device
memory, one copy per distinct set of maps.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .hopper.tma_spec import MapSpec, box_fits

# CUtensorMapDataType (cuda.h)
DATA_TYPES = {"uint8": 0, "int8": 0, "float8e4nv": 0, "float8e5": 0, "int1": 0, "uint16": 1, "int16": 1,
              "uint32": 2, "int32": 3, "uint64": 4, "int64": 5, "float16": 6, "float32": 7,
              "float64": 8, "bfloat16": 9}
INTERLEAVE_NONE = 0
SWIZZLE_NONE = 0
SWIZZLE_MODES = {0: SWIZZLE_NONE, 32: 1, 64: 2, 128: 3}  # CUtensorMapSwizzle by row bytes
L2_PROMOTION_128B = 2
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read as 0
MAP_BYTES = 128


@dataclass(frozen=True)
class EncodeArguments:
    """``cuTensorMapEncodeTiled``'s arguments, innermost dimension first."""

    data_type: int
    rank: int
    address: int
    dims: tuple[int, ...]          # rank sizes
    byte_strides: tuple[int, ...]  # rank - 1 strides in bytes (of dims 1..rank-1)
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int = INTERLEAVE_NONE
    swizzle: int = SWIZZLE_NONE
    l2_promotion: int = L2_PROMOTION_128B
    oob_fill: int = OOB_FILL_ZERO


def encode_arguments(spec: MapSpec, values: Sequence[Any], address: int | None) -> EncodeArguments | None:
    """The encode call for ``spec`` with the launch's ``values`` (indexed like the kernel's
    parameters) and the base's device ``address`` (None: host memory); None where TMA's rules
    do not hold."""
    if address is None or address % 16 or not box_fits(spec.box, spec.itemsize, spec.swizzle):
        return None
    dims = [s.of(values) for s in spec.shape]
    strides = [s.of(values) for s in spec.strides]
    if any(strides[0] <= 0 or m.of(values) % strides[0] for m in spec.multiples):
        return None  # the base is not the parameter itself (tma_rebase.py)
    if strides[-1] != 1 or not all(1 <= d <= 2 ** 32 for d in dims) or dims[-1] * spec.itemsize % 16:
        return None
    byte_strides = [s * spec.itemsize for s in strides[:-1]]
    if not all(0 < b < 2 ** 40 and b % 16 == 0 for b in byte_strides):
        return None
    return EncodeArguments(DATA_TYPES[spec.dtype], len(dims), address, tuple(reversed(dims)),
                           tuple(reversed(byte_strides)), tuple(reversed(spec.box)), (1,) * len(dims),
                           swizzle=SWIZZLE_MODES[spec.swizzle])


def encode(lib: Any, args: EncodeArguments) -> bytes | None:
    """The 128-byte map from ``lib.cuTensorMapEncodeTiled``; None when the driver refuses it."""
    u64s, u32s = ctypes.c_uint64 * args.rank, ctypes.c_uint32 * args.rank
    room = ctypes.create_string_buffer(MAP_BYTES + 64)  # the driver wants the map 64-byte aligned
    at = -ctypes.addressof(room) % 64
    out = ctypes.c_void_p(ctypes.addressof(room) + at)
    status = lib.cuTensorMapEncodeTiled(
        out, args.data_type, args.rank, ctypes.c_void_p(args.address), u64s(*args.dims),
        (ctypes.c_uint64 * max(1, args.rank - 1))(*args.byte_strides), u32s(*args.box),
        u32s(*args.element_strides), args.interleave, args.swizzle, args.l2_promotion, args.oob_fill)
    return room.raw[at:at + MAP_BYTES] if status == 0 else None


class MapTable:
    """Device copies of encoded maps, one per distinct (context, maps) content.  Entries are
    never rewritten (a kernel may still read one) nor freed before the process ends."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[int, bytes], int] = {}

    def device_copy(self, drv: Any, context: int, maps: bytes, stream: int) -> int:
        """The device address of ``maps``, copied there (and waited for) on first use."""
        key = (context, maps)
        address = self.buffers.get(key)
        if address is None:
            address = drv.alloc(len(maps))
            host = ctypes.create_string_buffer(maps, len(maps))
            drv.copy_to_device(address, ctypes.addressof(host), len(maps), stream)
            drv.check(drv.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")
            self.buffers[key] = address
        return address
