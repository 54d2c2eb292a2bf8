"""What the driver's own share of a launch depends on: ``cuLaunchKernel`` of an empty kernel in forms.

Same clock as ``launch_overhead.py`` (host issue time over windows of launches that start on an
idle GPU, and N launches plus a synchronize), every call through ctypes ``PyDLL`` with its
arguments prebuilt, so rows differ only in what the driver is asked:

- parameters as ``kernelParams`` (an array of pointers, as tiles and Triton pass them) or as one
  packed buffer through ``extra`` (``CU_LAUNCH_PARAM_BUFFER_POINTER``/``SIZE``);
- the stream: the legacy default stream (0, torch's default), a stream created non-blocking, the
  per-thread default stream (``CU_STREAM_PER_THREAD``);
- 4 parameters or 16;
- ``cuCtxGetCurrent`` alone (what tiles' native launch asks before each launch);
- an empty Python loop step and ``kernel[grid]`` of a tiles kernel without the call, for scale.

    python benchmarks/launch_driver_forms.py [-n 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import ctypes
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from launch_overhead import print_rows  # noqa: E402

PARAMS_16 = ", ".join(f".param .u64 p{i}" for i in range(16))
EMPTY_PTX = f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty4(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n) {{ ret; }}
.visible .entry empty16({PARAMS_16}) {{ ret; }}
"""
BUFFER_POINTER, BUFFER_SIZE, END = 1, 2, 0  # CU_LAUNCH_PARAM_*
STREAM_PER_THREAD, STREAM_NON_BLOCKING = 2, 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--window", type=int, default=100)
    opts = parser.parse_args()
    import torch

    import tiles
    import tiles.language as tl
    from tiles.backends.cuda import runtime
    x = torch.randn(1024, device="cuda")
    torch.cuda.synchronize()
    drv = runtime.driver()
    context = runtime.primary_context(torch.cuda.current_device())
    runtime.make_current(context)
    module = drv.load_module(EMPTY_PTX.encode())
    f4, f16 = drv.get_function(module, "empty4"), drv.get_function(module, "empty16")
    lib = ctypes.PyDLL(None, handle=drv.lib._handle)
    launch = lib.cuLaunchKernel
    launch.argtypes, launch.restype = [ctypes.c_void_p] * 11, ctypes.c_int
    current = lib.cuCtxGetCurrent
    current.argtypes, current.restype = [ctypes.c_void_p], ctypes.c_int
    created = ctypes.c_void_p()
    lib.cuStreamCreate.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    if lib.cuStreamCreate(ctypes.byref(created), STREAM_NON_BLOCKING):
        sys.exit("cuStreamCreate failed")

    def kernel_params(values: list[int]) -> ctypes.Array:
        storage = (ctypes.c_uint64 * len(values))(*values)
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(storage) + 8 * i for i in range(len(values))])
        pointers.keep = storage  # type: ignore[attr-defined]
        return pointers

    def extra(values: list[int]) -> ctypes.Array:
        buffer = ctypes.create_string_buffer(struct.pack(f"{len(values) - 1}QI", *values))
        size = ctypes.c_size_t(len(buffer) - 1)
        items = (ctypes.c_void_p * 5)(BUFFER_POINTER, ctypes.addressof(buffer), BUFFER_SIZE,
                                      ctypes.addressof(size), END)
        items.keep = (buffer, size)  # type: ignore[attr-defined]
        return items

    values4 = [x.data_ptr()] * 3 + [1024]
    values16 = [x.data_ptr()] * 16
    p4, p16, e4 = kernel_params(values4), kernel_params(values16), extra(values4)
    out = ctypes.c_void_p()

    @tiles.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    y = torch.empty_like(x)
    add[(1,)](x, x, y, 1024, BLOCK=1024)
    torch.cuda.synchronize()
    grid = (1,)
    rows = {
        "empty Python loop step (a lambda returning None)": lambda: None,
        "tiles kernel[grid] without the call": lambda: add[grid],
        "tiles kernel[grid](...), whole cached launch": lambda: add[grid](x, x, y, 1024, BLOCK=1024),
        "cuCtxGetCurrent": lambda: current(ctypes.byref(out)),
        "cuLaunchKernel, 4 params, kernelParams, stream 0": lambda: launch(f4, 1, 1, 1, 128, 1, 1, 0, 0, p4, None),
        "cuLaunchKernel, 4 params, extra buffer, stream 0": lambda: launch(f4, 1, 1, 1, 128, 1, 1, 0, 0, None, e4),
        "cuLaunchKernel, 4 params, kernelParams, non-blocking stream":
            lambda: launch(f4, 1, 1, 1, 128, 1, 1, 0, created, p4, None),
        "cuLaunchKernel, 4 params, kernelParams, per-thread stream":
            lambda: launch(f4, 1, 1, 1, 128, 1, 1, 0, STREAM_PER_THREAD, p4, None),
        "cuLaunchKernel, 16 params, kernelParams, stream 0": lambda: launch(f16, 1, 1, 1, 128, 1, 1, 0, 0, p16, None),
    }
    print_rows(rows, torch.cuda.synchronize, opts, 62)
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
