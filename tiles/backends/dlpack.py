"""The device and data address behind an object's ``__dlpack__`` capsule (ctypes, no copy)."""

from __future__ import annotations

import ctypes
from typing import Any

DLPACK_CPU = 1
DLPACK_CUDA = 2
DLPACK_ROCM = 10
DLPACK_ROCM_HOST = 11


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def device_type(obj: Any) -> int | None:
    """The DLPack device type of ``obj`` (CPU 1, ROCm 10), or None when it has no DLPack."""
    if not hasattr(obj, "__dlpack_device__"):
        return None
    return int(obj.__dlpack_device__()[0])


def is_contiguous(tensor: _DLTensor) -> bool:
    if not tensor.strides:
        return True
    expected = 1
    for axis in reversed(range(tensor.ndim)):
        if tensor.shape[axis] != 1 and tensor.strides[axis] != expected:
            return False
        expected *= tensor.shape[axis]
    return True


def data_address(obj: Any) -> tuple[int, bool]:
    """(address of the first element, whether the elements are C-contiguous).

    The capsule is not consumed: its producer keeps ownership, and ``obj`` must stay
    alive while the address is used.
    """
    capsule = obj.__dlpack__()
    # DLManagedTensor starts with its DLTensor, so the capsule pointer is a DLTensor*.
    tensor = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    return (tensor.data or 0) + tensor.byte_offset, is_contiguous(tensor)
