"""The raw stream handle of a launch, from whatever the caller uses for streams.

Shared by the CUDA and ROCm backends (torch and cupy name HIP streams like CUDA ones):
``stream=`` may be an int handle, a torch stream (``cuda_stream``), a cupy stream
(``ptr``), a pycuda stream (``handle``) or anything with ``__cuda_stream__``.  Without
one, a launch uses cupy's current stream for cupy arrays, else torch's current stream
of the device when torch has initialized CUDA, else the legacy default stream (0).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..core.errors import LaunchError


def stream_handle(stream: Any, device: int, cupy_args: bool = False) -> int:
    """The raw stream handle a launch on ``device`` uses (see the module docstring)."""
    if stream is None:
        return default_stream(device, cupy_args)
    if isinstance(stream, (int, np.integer)):
        return int(stream)
    on = getattr(stream, "device_index", None)  # torch.cuda.Stream
    if on is None and hasattr(stream, "device") and hasattr(stream.device, "id"):  # cupy
        on = stream.device.id
    if on is not None and on != device:
        raise LaunchError(f"stream={stream!r} belongs to cuda:{on} but the arguments are on cuda:{device}; "
                          f"pass a stream of cuda:{device} (torch.cuda.Stream(device={device}))")
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr", "handle"):  # torch, cupy, pycuda
        handle = getattr(stream, attribute, None)
        if isinstance(handle, (int, np.integer)):
            return int(handle)
    raise LaunchError(f"stream={stream!r}: expected an int CUstream handle, a torch.cuda.Stream, a cupy "
                      "or pycuda stream, or an object with __cuda_stream__")


def default_stream(device: int, cupy_args: bool) -> int:
    if cupy_args and "cupy" in sys.modules:
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return int(raw(device)) if raw is not None else int(torch.cuda.current_stream(device).cuda_stream)
    return 0
