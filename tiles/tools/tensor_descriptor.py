"""``TensorDescriptor``: a tensor descriptor built on the host and passed to a kernel.

As Triton's ``triton.tools.tensor_descriptor.TensorDescriptor``: a base array with its shape,
strides (in elements) and the block shape the kernel loads and stores, so that
``desc.load([off0, off1])`` / ``desc.store([off0, off1], tile)`` in the kernel read and write
``block_shape`` tiles, reading 0 outside ``shape`` and dropping writes there.  A launch passes the
descriptor as its base pointer plus one integer per size and stride (``runtime/descriptor_args.py``),
and the kernel sees what ``tl.make_tensor_descriptor(base, shape, strides, block_shape)`` gives.

The rules are Triton's (they are what a TMA copy on sm_90 needs): rank 1 to 5, the last stride 1,
every other stride and the base address a multiple of 16 bytes, positive sizes, block sizes powers
of two.  They are checked when the descriptor is made and again, with the kernel's file:line, when
a launch meets a new block shape (Triton's autotuning tutorials set ``block_shape`` in a
``pre_hook``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_RANK = 5
PADDINGS = ("zero", "nan")


class TensorDescriptorError(ValueError):
    """A descriptor that breaks one of the rules above; the message says which and how to fix it."""


def element_size(base: Any) -> int:
    """Bytes per element of an array-like (NumPy, torch, CuPy, CUDA-array-interface objects)."""
    size = getattr(base, "itemsize", None)
    if isinstance(size, int):
        return size
    element_size_method = getattr(base, "element_size", None)
    if callable(element_size_method):
        return int(element_size_method())
    return int(np.dtype(base.dtype).itemsize)


def base_address(base: Any) -> int | None:
    """The address of an array-like's first element, or None where it cannot be read here."""
    if isinstance(base, np.ndarray):
        return int(base.__array_interface__["data"][0])
    data_ptr = getattr(base, "data_ptr", None)
    if callable(data_ptr):
        return int(data_ptr())
    interface = getattr(base, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0])
    return None


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def block_shape_problem(block_shape: Sequence[Any], rank: int) -> str | None:
    """What is wrong with ``block_shape`` for a rank-``rank`` descriptor, or None."""
    if len(block_shape) != rank:
        return (f"block_shape {list(block_shape)} has {len(block_shape)} entries but the tensor has rank {rank}: "
                f"give one block size per axis")
    for axis, size in enumerate(block_shape):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            return f"block_shape[{axis}] is {size!r}; block sizes are Python ints"
        if not _is_power_of_two(int(size)):
            return f"block_shape[{axis}] is {size}; block sizes must be powers of two (e.g. 16, 32, 64)"
    return None


def problem(desc: TensorDescriptor) -> str | None:
    """The first rule ``desc`` breaks, as a sentence with the fix, or None."""
    rank = len(desc.shape)
    if not 1 <= rank <= MAX_RANK:
        return f"rank {rank}: descriptors describe tensors of rank 1 to {MAX_RANK}"
    if len(desc.strides) != rank:
        return f"shape {list(desc.shape)} and strides {list(desc.strides)} differ in rank: give one stride per axis"
    bad_block = block_shape_problem(desc.block_shape, rank)
    if bad_block:
        return bad_block
    for axis, n in enumerate((*desc.shape, *desc.strides)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            what = f"shape[{axis}]" if axis < rank else f"strides[{axis - rank}]"
            return f"{what} is {n!r}; sizes and strides are ints (in elements)"
    if any(int(n) <= 0 for n in desc.shape):
        return f"shape {list(desc.shape)}: every size must be positive"
    if int(desc.strides[-1]) != 1:
        return (f"strides {list(desc.strides)}: the last stride must be 1 (the innermost axis contiguous); "
                f"pass a contiguous tensor or one transposed so that its last axis is contiguous")
    itemsize = element_size(desc.base)
    for axis, stride in enumerate(desc.strides[:-1]):
        if int(stride) * itemsize % 16:
            return (f"strides[{axis}] is {stride} elements = {int(stride) * itemsize} bytes, not a multiple of "
                    f"16: every stride but the last must be 16-byte aligned; pad the rows (allocate a row "
                    f"length that is a multiple of {16 // np.gcd(16, itemsize)} elements and slice it)")
    address = base_address(desc.base)
    if address is not None and address % 16:
        return (f"the base address {address:#x} is not a multiple of 16 bytes; pass an array whose first "
                f"element is 16-byte aligned (not a slice starting at an odd offset)")
    if desc.padding not in PADDINGS:
        return f"padding {desc.padding!r}: expected one of {', '.join(map(repr, PADDINGS))}"
    return None


def _caller() -> str:
    """``file:line`` of the code that made the descriptor (outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename in (__file__, "<string>")
                                 or frame.f_code.co_filename.endswith("dataclasses.py")):
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


@dataclass(eq=False)
class TensorDescriptor:
    """``base`` (an array), its ``shape`` and ``strides`` in elements, and the ``block_shape`` a
    kernel's ``desc.load``/``desc.store`` move.  Mutable, as Triton's: a ``pre_hook`` may set
    ``block_shape`` before each launch."""

    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"
    round_f32_to_tf32: bool = field(default=False)

    def __post_init__(self) -> None:
        self.shape = [int(n) for n in self.shape] if _all_ints(self.shape) else list(self.shape)
        self.strides = [int(n) for n in self.strides] if _all_ints(self.strides) else list(self.strides)
        self.block_shape = list(self.block_shape)
        why = problem(self)
        if why is None and self.round_f32_to_tf32:
            why = "round_f32_to_tf32=True is not supported by tiles; leave it False"
        if why is not None:
            raise TensorDescriptorError(f"{_caller()}: TensorDescriptor: {why}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Sequence[int], padding: str = "zero",
                    round_f32_to_tf32: bool = False) -> TensorDescriptor:
        """A descriptor of all of ``tensor`` (its shape and strides) moving ``block_shape`` tiles."""
        stride = getattr(tensor, "stride", None)
        if callable(stride):  # torch
            strides = [int(s) for s in stride()]
        else:  # NumPy-like: strides in bytes
            itemsize = element_size(tensor)
            byte_strides = [int(s) for s in tensor.strides]
            if any(s % itemsize for s in byte_strides):
                raise TensorDescriptorError(f"{_caller()}: TensorDescriptor.from_tensor: strides {byte_strides} "
                                            f"(bytes) are not whole elements of {itemsize} bytes")
            strides = [s // itemsize for s in byte_strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, list(block_shape), padding,
                                round_f32_to_tf32)


def _all_ints(values: Sequence[Any]) -> bool:
    return all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in values)
