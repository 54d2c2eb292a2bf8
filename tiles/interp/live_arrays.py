"""Live host arrays found by address, for pointers a kernel makes from integers.

A kernel may load device addresses from memory (``x.ctypes.data``, ``t.data_ptr()``) and
turn them into pointers.  When such an address lies in no array passed to the launch,
the interpreter looks for a *live* NumPy array or CPU torch tensor that holds it: one
reachable from an object the garbage collector tracks (a list, a dict, an object's
attributes) or from a local variable of a running Python frame.  An array that is alive
owns (or keeps alive) its memory, so reading inside its extent is sound, and accesses
get the same bounds checks as an argument's.  Arrays found are remembered weakly: a
later launch tries the remembered ones that are still alive before scanning again.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

import numpy as np

_REMEMBERED: list[weakref.ref[Any]] = []
_LOCK = threading.Lock()  # launches may run on several threads


def extent(arr: np.ndarray) -> tuple[int, int]:
    """(lowest byte, one past the highest byte) of the view's elements, absolute."""
    start = arr.__array_interface__["data"][0]
    if arr.size == 0:
        return start, start
    lo = hi = start
    for n, s in zip(arr.shape, arr.strides):
        lo += min(0, (n - 1) * s)
        hi += max(0, (n - 1) * s)
    return lo, hi + arr.itemsize


def as_host_array(obj: Any) -> np.ndarray | None:
    """``obj`` as a NumPy view of its memory, when it is an ndarray or a CPU torch tensor."""
    if isinstance(obj, np.ndarray):
        return obj
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor) or obj.device.type != "cpu":
        return None
    same_size_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    try:
        t = obj.detach()
        if t.dtype.is_floating_point and t.element_size() in (1, 2) and t.dtype != torch.float16:
            t = t.view(same_size_int[t.element_size()])  # bfloat16/float8: NumPy has no such type
        return t.numpy()
    except (RuntimeError, TypeError, KeyError):
        return None


def _candidates() -> Iterator[Any]:
    """Every object the collector tracks and everything they refer to; frame locals."""
    for obj in gc.get_objects():
        yield obj
        yield from gc.get_referents(obj)
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        yield from frame.f_locals.values()
        frame = frame.f_back


def remembered_arrays() -> list[np.ndarray]:
    """The live arrays found by earlier scans that are still alive."""
    with _LOCK:
        objects = [ref() for ref in _REMEMBERED]
        _REMEMBERED[:] = [ref for ref, obj in zip(_REMEMBERED, objects) if obj is not None]
    arrays = (as_host_array(obj) for obj in objects if obj is not None)
    return [arr for arr in arrays if arr is not None]


def _scan() -> Iterator[tuple[Any, np.ndarray]]:
    seen: set[int] = set()
    kept: list[np.ndarray] = []  # alive while scanning, so ids in ``seen`` are not reused
    torch = sys.modules.get("torch")
    for obj in _candidates():
        kind = type(obj)  # not isinstance: it reads __class__, which some objects warn on (torch's deprecated names)
        if not issubclass(kind, np.ndarray) and (torch is None or not issubclass(kind, torch.Tensor)):
            continue
        arr = as_host_array(obj)
        while arr is not None and id(arr) not in seen:
            seen.add(id(arr))
            kept.append(arr)
            yield obj, arr
            obj = arr.base if isinstance(arr.base, np.ndarray) else None
            arr = obj


class LiveIndex:
    """Every live host array at one moment (one heap scan), searchable by address.  A
    launch builds it at most once: a kernel creates no arrays while it runs."""

    def __init__(self) -> None:
        found: dict[tuple[int, int], tuple[Any, np.ndarray]] = {}
        for obj, arr in _scan():
            lo, hi = extent(arr)
            if hi > lo:
                found.setdefault((lo, hi), (obj, arr))
        self._entries = list(found.values())
        self._lo = np.array([lo for lo, _ in found], np.int64)
        self._hi = np.array([hi for _, hi in found], np.int64)

    def holding(self, addresses: np.ndarray) -> list[np.ndarray]:
        """The arrays whose extent holds one of ``addresses`` (one past the end included),
        remembered weakly for later launches."""
        wanted = np.unique(addresses)
        hit = np.zeros(len(self._entries), np.bool_)
        for start in range(0, wanted.size, 256):
            w = wanted[start:start + 256, None]
            hit |= ((self._lo <= w) & (w <= self._hi)).any(axis=0)
        chosen = [self._entries[k] for k in np.flatnonzero(hit)]
        refs = []
        for obj, _ in chosen:
            try:
                refs.append(weakref.ref(obj))
            except TypeError:  # an object without weak references: found again next time
                pass
        with _LOCK:
            _REMEMBERED.extend(refs)
        return [arr for _, arr in chosen]
