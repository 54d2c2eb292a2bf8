"""Host cost of the CUDA launch path without a GPU: ``kernel[grid](...)`` over a do-nothing libcuda.

Builds ``tests/backends/cuda/libcuda_stub.c`` (every driver call succeeds at once) with ``cc``, points
the CUDA runtime at it, and times back-to-back launches through the whole jit path
(``kernel[grid](...)``: binding, specialization key, stream and context choice, argument packing,
``cuLaunchKernel`` through the kernel's native hot launch, ``tiles/backends/cuda/launch/hot_launch.py``;
one row without the hot launch (the Python launch function and the direct launch), one with the
native launches switched off, through ctypes).
The arguments are stand-ins for torch CUDA tensors, served by a minimal fake ``torch`` module
(this machine may have no torch; the fake answers what the launch path asks: ``torch.Tensor``,
``torch.cuda.is_initialized()``, the current raw stream).  NumPy arrays take the
staging path (copies are no-ops here).  On a GPU, ``benchmarks/launch_overhead.py`` measures the
real thing against Triton.

``--torch`` uses REAL torch CPU tensors instead (torch's own ``dtype``/``data_ptr()``/``get_device()``
cost what they cost): a clearly marked stub mode, ``backends/cuda/launch/launcher.stub_cpu_device = 0``,
makes the launch path take CPU tensors (device -1) as tensors on the stand-in's device 0, and
torch's current-stream query (absent from CPU builds) is stood in for by a C builtin of one
argument that returns 0.  torch must be importable; on the session's VM:
``PYTHONPATH=/tmp/tritonvenv/lib/python3.11/site-packages python benchmarks/cuda_launch_path_stub.py --torch``.

The mamba state-update row is ``corpus_speed.py``'s b64 h1 5120x16 launch (a stack of four
``@heuristics``, 26 arguments), whose host cost once exceeded the benchmark's L2 flush on the GPU.

    python benchmarks/cuda_launch_path_stub.py [--torch] [--profile] [-n N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    """What the launch path reads from a torch CUDA tensor."""

    is_cuda = True

    def __init__(self, address: int, dtype: FakeDtype) -> None:
        self.address = address
        self.dtype = dtype
        self.device = types.SimpleNamespace(type="cuda", index=0)

    def get_device(self) -> int:
        return 0

    def data_ptr(self) -> int:
        return self.address


def install_fake_torch() -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.Tensor = FakeTensor  # type: ignore[attr-defined]
    torch.float32 = FakeDtype("float32")  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0)  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)  # type: ignore[attr-defined]
    FakeTensor.__module__ = "torch"
    sys.modules["torch"] = torch
    return torch


def use_real_torch() -> types.ModuleType:
    """Real torch, its CPU tensors taken as device-0 tensors by the launch path (stub mode only)."""
    import torch

    from tiles.backends.cuda.launch import launcher
    launcher.stub_cpu_device = 0  # STUB MODE: CPU tensors stand for tensors on the stand-in's device 0
    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):  # a CPU build: a C builtin of one argument
        torch._C._cuda_getCurrentRawStream = abs  # abs(0) == 0: the default stream of device 0
    return torch


def per_launch_us(fn, n: int = 20000, repeats: int = 7) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t = time.process_time()
        for _ in range(n):
            fn()
        samples.append((time.process_time() - t) / n * 1e6)
    return min(samples)  # CPU time; the least disturbed repeat (the box is shared)


def mamba_state_update(f32: object, fake: type | None, torch: types.ModuleType) -> Callable[[], None]:
    """The corpus benchmark's b64 h1 5120x16 launch of mamba's ``_ssm_step``: a stack of four
    ``@heuristics``, 26 arguments, a grid function (``corpus_speed.py``'s call)."""
    sys.path[:0] = [str(ROOT), str(ROOT.parent / "tests" / "compat")]
    from corpus_speed import load
    kernel = load("mamba/selective_state_update", "tiles", Path(tempfile.mkdtemp()))._ssm_step
    tensors = [fake(0x100000 * (i + 1), f32) if fake else torch.empty(16) for i in range(10)]
    batch, heads, dim, dstate = 64, 1, 5120, 16
    strides = [heads * dim * dstate, dim * dstate, dstate, heads * dim, dim, heads * dim, dim, dim * dstate, dstate,
               dstate, dstate, heads * dim, dim]

    def grid(meta):
        return (-(-dim // meta["BLOCK_M"]), batch, heads)

    return lambda: kernel[grid](*tensors, dim, dstate, heads, *strides, SOFTPLUS=True, BLOCK_M=32, num_warps=4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", action="store_true", help="cProfile the 8-argument launch")
    parser.add_argument("-n", type=int, default=20000)
    parser.add_argument("--torch", action="store_true", help="real torch CPU tensors (stub mode, see above)")
    opts = parser.parse_args()
    torch = use_real_torch() if opts.torch else install_fake_torch()
    from launch_kernels_cpu import add_kernel, eight_args  # imports tiles after the torch stand-in

    from tiles.backends.cuda import runtime
    from tiles.backends.cuda.driver import Driver, load_library

    library = Path(tempfile.mkdtemp()) / "libcuda_stub.so"
    source = ROOT.parent / "tests" / "backends" / "cuda" / "libcuda_stub.c"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    runtime.use_driver(Driver(load_library(str(library))))
    f32 = torch.float32
    if opts.torch:
        x, y, out = (torch.empty(1024) for _ in range(3))
    else:
        x, y, out = (FakeTensor(0x10000 * (i + 1), f32) for i in range(3))
    arrays = [np.ones(1024, np.float32), np.ones(1024, np.float32), np.empty(1024, np.float32)]

    def add() -> None:
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, backend="cuda")

    def eight() -> None:
        eight_args[(4,)](x, y, out, 1024, 1000, 1e-5, BLOCK=1024, RELU=True, backend="cuda")

    if opts.profile:
        import cProfile
        import pstats
        eight()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(opts.n):
            eight()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)
        return
    print(f"add_kernel, 5 arguments, tensors:  {per_launch_us(add, opts.n):6.2f} us per launch")
    print(f"8 arguments (2 constexpr), tensors: {per_launch_us(eight, opts.n):6.2f} us per launch")

    def default_backend() -> None:
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024)

    print(f"add_kernel, default backend:        {per_launch_us(default_backend, opts.n):6.2f} us per launch")
    def on_stream() -> None:
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, backend="cuda", stream=7)

    print(f"add_kernel, stream=int:             {per_launch_us(on_stream, opts.n):6.2f} us per launch")

    def grid(meta):
        return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)

    def grid_function() -> None:
        add_kernel[grid](x, y, out, 1024, BLOCK=1024, backend="cuda")

    print(f"add_kernel, grid function:          {per_launch_us(grid_function, opts.n):6.2f} us per launch")
    state_update = mamba_state_update(f32, FakeTensor if not opts.torch else None, torch)
    print(f"mamba state update, 4 @heuristics:  {per_launch_us(state_update, 2000):6.2f} us per launch")
    from tiles.backends.cuda.launch import hot_launch, trampoline
    hot_launch.enabled = False  # launch plans built from here on have no native hot launch
    add_kernel._launches.clear()
    print(f"add_kernel, no hot launch:          {per_launch_us(add, opts.n):6.2f} us per launch")
    hot_launch.enabled = True
    trampoline.enabled = False  # launch plans built from here on call the driver through ctypes
    add_kernel._launches.clear()
    print(f"add_kernel, ctypes launch:          {per_launch_us(add, opts.n):6.2f} us per launch")
    trampoline.enabled = True
    add_kernel._launches.clear()
    print(f"add_kernel, NumPy arrays:           "
          f"{per_launch_us(lambda: add_kernel[(1,)](*arrays, 1024, BLOCK=1024, backend='cuda'), 2000):6.2f}"
          " us per launch")


if __name__ == "__main__":
    main()
