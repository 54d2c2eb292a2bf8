"""Host arrays staged through device memory: the bytes a (possibly strided) view spans.

A GPU backend copies a NumPy argument to the device and back.  For a view that is not
contiguous (a slice with a step, a transpose, a column) it copies the *span* of the
view: every byte from the view's lowest to its highest element, gaps included, so the
kernel's own strides still address the right elements.  The kernel receives the device
address of the view's first element (``offset`` bytes into the span; non-zero only
with negative strides).  After a launch that may write the argument, the bytes of the span
that the kernel changed are copied back, gaps included: a kernel that writes through the view's
address as if it were contiguous changes the same bytes as on the interpreter or with a device
tensor (a GPU's memory effect).  Bytes the kernel left alone are not written, so another view of
the same array in the gaps (itself an argument, written back after this one) keeps its values.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class _Raw:
    """``nbytes`` bytes at ``address`` as a NumPy buffer (keeps ``owner`` alive)."""

    def __init__(self, address: int, nbytes: int, readonly: bool, owner: Any) -> None:
        self.owner = owner
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


def extent(view: np.ndarray) -> tuple[int, int]:
    """(lowest byte, one past the highest byte) that the view's elements occupy."""
    start = view.__array_interface__["data"][0]
    if view.size == 0:
        return start, start
    lo = hi = start
    for n, s in zip(view.shape, view.strides):
        lo += min(0, (n - 1) * s)
        hi += max(0, (n - 1) * s)
    return lo, hi + view.itemsize


class HostSpan:
    """The memory span of one NumPy argument, ready to copy to a device and back."""

    def __init__(self, view: np.ndarray) -> None:
        self.view = view
        self.contiguous = view.flags.c_contiguous or view.flags.f_contiguous
        if self.contiguous:
            self.offset = 0
            self.nbytes = view.nbytes
            self.bytes = view.reshape(-1, order="A").view(np.uint8) if view.size else \
                np.empty(0, np.uint8)
            return
        lo, hi = extent(view)
        self.offset = view.__array_interface__["data"][0] - lo
        self.nbytes = hi - lo
        self.bytes = np.asarray(_Raw(lo, self.nbytes, True, view))
        self.sent = self.bytes.copy()  # what the device starts from: changed bytes go back

    @property
    def negative_strides(self) -> bool:
        return self.offset != 0

    def host_buffer(self) -> np.ndarray:
        """A contiguous uint8 array to receive the span's bytes from the device."""
        return self.view.reshape(-1, order="A").view(np.uint8) if self.contiguous and self.view.size \
            else np.empty(self.nbytes, np.uint8)

    def write_back(self, received: np.ndarray) -> None:
        """Store the view's elements from ``received`` (the span's bytes, as copied from the
        device) into the view; a contiguous view's ``host_buffer`` already is the view."""
        if self.contiguous or not self.view.size:
            if self.view.size and host_pointer(received) != host_pointer(self.view):
                self.view.reshape(-1, order="A").view(np.uint8)[...] = received
            return
        changed = received != self.sent
        span = np.asarray(_Raw(host_pointer(self.bytes), self.nbytes, False, self.view))
        span[changed] = received[changed]


def host_pointer(array: np.ndarray) -> int:
    """The address of a contiguous array's first byte."""
    return int(array.__array_interface__["data"][0])
