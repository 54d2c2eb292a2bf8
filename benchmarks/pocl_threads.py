"""Run time on a CPU OpenCL device (pocl) with ``num_warps * 32`` work-items per program beside
the CPU rule (enough work-items that each holds at most 4 (the default), or 8, elements of the
largest tile), and the CPU rule with reduction trees that take one level per barrier instead of
``OpenCLBackend.cpu_tree_levels_per_barrier``.

Every variant launches the same kernels on the same pyopencl arrays; outputs are checked
against NumPy first; each timing is the median of ``--repeat`` launches + ``queue.finish()``
after two warm-up launches.  Compile times (pocl build and the first launch) are printed too.

    python benchmarks/pocl_threads.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tiles.backends.base import Options  # noqa: E402
from tiles.backends.opencl import OpenCLBackend  # noqa: E402
from tiles.core.ir import Kernel  # noqa: E402


class WarpThreads(OpenCLBackend):
    """The GPU rule on every device: ``num_warps * 32`` work-items."""

    name = "opencl-warp-threads"  # its own entries in the jit's caches

    def _threads(self, options: Options, kernel: Kernel) -> int:
        return min(options.num_warps * 32, self.target().max_threads_per_block)


class CPURule(OpenCLBackend):
    """The CPU rule with another number of elements per work-item."""

    def __init__(self, elements: int) -> None:
        self.cpu_elements_per_work_item = elements
        self.name = f"opencl-{elements}-per-item"


class OneLevelTrees(OpenCLBackend):
    """The CPU rule, reductions combining one tree level between barriers (as on GPUs)."""

    name = "opencl-one-level-trees"
    cpu_tree_levels_per_barrier = 1


def example(name: str):
    path = next((ROOT / "examples").glob(f"*_{name}.py"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(queue, rng):
    import pyopencl.array as cla
    add = example("vector_add").add_kernel
    n = 1 << 20
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    dx, dy, dout = cla.to_device(queue, x), cla.to_device(queue, y), cla.empty(queue, n, np.float32)
    yield ("vector add 2^20 fp32, BLOCK=1024", lambda be: add[(n // 1024,)](dx, dy, dout, n, BLOCK=1024, backend=be),
           lambda: np.testing.assert_array_equal(dout.get(), x + y))

    softmax = example("fused_softmax").softmax_kernel
    rows, cols = 512, 1000
    s = rng.standard_normal((rows, cols)).astype(np.float32)
    ds, dso = cla.to_device(queue, s), cla.empty(queue, (rows, cols), np.float32)
    expect = np.exp(s - s.max(1, keepdims=True))
    expect /= expect.sum(1, keepdims=True)
    yield ("softmax 512x1000 fp32, BLOCK=1024",
           lambda be: softmax[(rows,)](dso, ds, cols, cols, rows, cols, BLOCK=1024, backend=be),
           lambda: np.testing.assert_allclose(dso.get(), expect, rtol=1e-5, atol=1e-6))

    matmul = example("matmul").matmul_kernel
    m = k = nn = 256
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, nn)).astype(np.float16)
    da, db, dc = cla.to_device(queue, a), cla.to_device(queue, b), cla.empty(queue, (m, nn), np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32))
    yield ("matmul 256^3 fp16, 64x64x32 tiles",
           lambda be: matmul[(16,)](da, db, dc, m, nn, k, k, 1, nn, 1, nn, 1, BLOCK_M=64, BLOCK_N=64,
                                    BLOCK_K=32, GROUP_M=8, backend=be),
           lambda: np.testing.assert_allclose(dc.get().astype(np.float32), want, rtol=1e-2, atol=5e-2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    from tiles.backends.opencl import runtime
    _, queue, device = runtime.device()
    print(f"device: {device.platform.name} / {device.name}")
    variants = {"num_warps*32": WarpThreads(), "CPU rule, 8": CPURule(8), "CPU rule, 4": OpenCLBackend(),
                "4, 1-level trees": OneLevelTrees()}
    print(f"{'kernel':36s} {'variant':16s} {'threads':>7s} {'first launch s':>15s} {'run ms':>9s}")
    for name, launch, check in cases(queue, np.random.default_rng(0)):
        for label, backend in variants.items():
            start = time.perf_counter()
            compiled = launch(backend)
            queue.finish()
            first = time.perf_counter() - start
            check()
            launch(backend)
            queue.finish()
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                launch(backend)
                queue.finish()
                times.append(time.perf_counter() - start)
            print(f"{name:36s} {label:16s} {compiled.metadata['threads']:7d} {first:15.1f} "
                  f"{statistics.median(times) * 1e3:9.3f}", flush=True)


if __name__ == "__main__":
    main()
