"""What a launch costs below tiles on this machine: the floor under ``launch_overhead.py``'s rows.

Same clock as ``launch_overhead.py`` (host issue time over windows of launches that start on an
idle GPU, and time including a synchronize), for calls that involve no launch path at all:

- a ctypes call of a do-nothing native function with 11 pointer arguments (JIT-compiled with
  llvmlite): the price of crossing from Python into C with cuLaunchKernel's arity;
- ``cuLaunchKernel`` of an empty kernel through ctypes with every argument prebuilt, through a
  ``CDLL`` (releases the GIL) and a ``PyDLL`` (keeps it);
- the same launch through tiles' native trampoline (``tiles/backends/cuda/launch/trampoline.py``: one
  builtin call with a packed record; it checks the current context and releases the GIL around
  ``cuLaunchKernel``), with the record prebuilt, and with the ``struct.pack`` a tiles launch does;
  and the trampoline over the no-op above in place of ``cuLaunchKernel``: its crossing alone;
- the native direct launch a cached tiles launch makes (``tiles/backends/cuda/launch/direct_launch.py``:
  one builtin call with the Python arguments, converted in native code, torch's current stream
  asked from native code);
- one small torch op (``out.copy_(x)``), for scale.

    python benchmarks/launch_floor.py [-n 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import ctypes
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from launch_overhead import print_rows  # noqa: E402

EMPTY_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n) { ret; }
.visible .entry empty_grid(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n,
                           .param .u32 gx, .param .u32 gy, .param .u32 gz) { ret; }
"""


def noop_function() -> ctypes._CFuncPtr:
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    params = ", ".join(f"i64 %a{i}" for i in range(11))
    module = llvm.parse_assembly(f"define i32 @noop({params}) {{\n  ret i32 0\n}}\n")
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    noop_function.engine = engine  # type: ignore[attr-defined]  # keeps the code alive
    kind = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 11)
    return kind(engine.get_function_address("noop"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--window", type=int, default=100)
    opts = parser.parse_args()
    import torch
    x = torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    from tiles.backends.cuda import runtime
    drv = runtime.driver()
    context = runtime.primary_context(torch.cuda.current_device())
    runtime.make_current(context)
    module = drv.load_module(EMPTY_PTX.encode())
    function = drv.get_function(module, "empty")
    storage = (ctypes.c_uint64 * 4)(x.data_ptr(), x.data_ptr(), out.data_ptr(), 1024)
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(storage) + 8 * i for i in range(4)])
    stream = torch.cuda.current_stream().cuda_stream
    handle = drv.lib._handle
    cdll = ctypes.CDLL(None, handle=handle).cuLaunchKernel
    pydll = ctypes.PyDLL(None, handle=handle).cuLaunchKernel
    for f in (cdll, pydll):
        f.argtypes, f.restype = [ctypes.c_void_p] * 11, ctypes.c_int
    noop = noop_function()
    from tiles.backends.cuda.launch import trampoline
    record = struct.Struct(trampoline.record_format("QQQIiii"))
    native = trampoline.make(drv.native_address("cuCtxGetCurrent"), drv.native_address("cuLaunchKernel"), context,
                             drv.get_function(module, "empty_grid"), 128, 0, record.size)
    if native is None:
        sys.exit(f"no trampoline: {trampoline.unavailable_reason()}")
    crossing = trampoline.make(drv.native_address("cuCtxGetCurrent"), ctypes.cast(noop, ctypes.c_void_p).value,
                               context, function, 128, 0, record.size)
    from tiles.backends.cuda.launch import direct_launch, launcher
    direct = direct_launch.make(drv.native_address("cuCtxGetCurrent"), drv.native_address("cuLaunchKernel"), context,
                                drv.get_function(module, "empty_grid"), 128, 0, ["Q", "Q", "Q", "I"],
                                runtime.driver_generation, launcher._raw_stream_query(),
                                torch.cuda.current_device())
    if direct is None:
        sys.exit(f"no direct launch: {direct_launch.unavailable_reason()}")
    packed = record.pack(stream, x.data_ptr(), x.data_ptr(), out.data_ptr(), 1024, 1, 1, 1)
    pack = record.pack
    a, b, c = x.data_ptr(), x.data_ptr(), out.data_ptr()
    rows = {
        "ctypes call of a no-op with 11 pointer arguments": lambda: noop(1, 1, 1, 1, 1, 1, 1, 0, stream, params, None),
        "cuLaunchKernel, ctypes CDLL, prebuilt arguments":
            lambda: cdll(function, 1, 1, 1, 128, 1, 1, 0, stream, params, None),
        "cuLaunchKernel, ctypes PyDLL (GIL held), prebuilt":
            lambda: pydll(function, 1, 1, 1, 128, 1, 1, 0, stream, params, None),
        "tiles trampoline over a no-op in place of cuLaunchKernel": lambda: crossing(packed),
        "tiles trampoline, prebuilt record": lambda: native(packed),
        "tiles trampoline, struct.pack of the record + call": lambda: native(pack(stream, a, b, c, 1024, 1, 1, 1)),
        "tiles direct launch, Python arguments + current stream": lambda: direct(None, (1,), a, b, c, 1024),
        "torch out.copy_(x), 1024 floats": lambda: out.copy_(x),
    }
    print_rows(rows, torch.cuda.synchronize, opts, 58)
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
