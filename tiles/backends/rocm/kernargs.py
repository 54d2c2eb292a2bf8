"""Packing launch arguments into the kernarg buffer a code object's metadata describes.

Pure: no HIP.  The kernel's explicit arguments are the user's (pointers as 64-bit device
addresses, scalars in the kernel's parameter type) followed by the grid size as three
``i32``; each is written at the offset the metadata gives it.  Hidden arguments (HIP's
implicit block counts and pointers, code object v5+) are filled in by the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...core.dtypes import PointerType, ScalarType
from ...core.errors import LaunchError
from ..base import LaunchArg
from .codeobject import KernelInfo

GRID_ARGS = 3


def scalar_value(arg: LaunchArg, dtype: ScalarType) -> np.generic:
    """``arg.value`` as a NumPy scalar of the kernel's parameter type; raises if it does not fit."""
    np_type = np.uint64 if isinstance(dtype, PointerType) else dtype.np.type
    try:
        value = np_type(arg.value)
    except (OverflowError, ValueError, TypeError) as e:
        raise LaunchError(f"argument {arg.name!r}={arg.value!r} is not a valid {dtype}: {e}") from None
    return value


def pack_arguments(kernel: KernelInfo, args: Sequence[LaunchArg], dtypes: Sequence[ScalarType],
                   grid: tuple[int, int, int], device_address: Callable[[LaunchArg], int]) -> bytes:
    """The explicit part of the kernarg segment of ``kernel`` for one launch.

    ``dtypes`` are the kernel's parameter types, one per argument; ``device_address``
    gives the device address of a pointer argument (staging host arrays if it must).
    """
    slots = kernel.explicit_args
    if len(args) != len(dtypes):
        raise LaunchError(f"{kernel.name}: {len(args)} arguments for {len(dtypes)} parameters")
    if len(slots) != len(args) + GRID_ARGS:
        raise LaunchError(f"{kernel.name}: the code object takes {len(slots)} explicit arguments, "
                          f"expected {len(args)} plus {GRID_ARGS} grid sizes")
    values = [np.uint64(device_address(a)) if a.is_pointer else scalar_value(a, t)
              for a, t in zip(args, dtypes)]
    values += [np.int32(n) for n in grid]
    names = [a.name for a in args] + ["num_programs_x", "num_programs_y", "num_programs_z"]
    buffer = bytearray(max((s.offset + s.size for s in slots), default=0))
    for slot, value, name in zip(slots, values, names):
        raw = value.tobytes()
        if len(raw) != slot.size:
            raise LaunchError(f"{kernel.name}: argument {name!r} is {len(raw)} bytes but the code "
                              f"object's slot {slot.name or slot.offset!r} is {slot.size}")
        buffer[slot.offset:slot.offset + slot.size] = raw
    return bytes(buffer)
