"""Host cost of the CUDA launch path without a GPU: tiles' launcher over a do-nothing libcuda.

Builds ``tests/backends/cuda/libcuda_stub.c`` (every driver call succeeds at once) with ``cc``, points
the CUDA runtime at it, and times back-to-back launches of a compiled kernel with torch-style
CUDA tensors (the fast path) and with NumPy arrays (staging path; copies are no-ops here).
What remains is the Python + ctypes cost of a launch: context check, stream choice, argument
packing, ``cuLaunchKernel``.  On a GPU, ``benchmarks/launch_overhead.py`` measures the real thing.

    python benchmarks/cuda_launch_path_stub.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

import tiles  # noqa: E402
import tiles.language as tl  # noqa: E402
from tiles.backends.cuda import CUDABackend, runtime  # noqa: E402
from tiles.backends.cuda.driver import Driver, load_library  # noqa: E402


@tiles.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


class StubTensor:
    """What the fast path reads from a torch CUDA tensor."""

    is_cuda = True

    def __init__(self, address: int) -> None:
        self.address = address

    def get_device(self) -> int:
        return 0

    def data_ptr(self) -> int:
        return self.address


def per_launch_us(fn, n: int = 20000, repeats: int = 5) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    library = Path(tempfile.mkdtemp()) / "libcuda_stub.so"
    source = ROOT.parent / "tests" / "backends" / "cuda" / "libcuda_stub.c"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    runtime.use_driver(Driver(load_library(str(library))))
    x = np.ones(1024, np.float32)
    compiled = add_kernel.warmup(x, x, x, 1024, BLOCK=1024, backend="cuda")
    plan = [(0, "x", True, False), (1, "y", True, False), (2, "out", True, True), (3, "n", False, False)]
    launch = CUDABackend().make_launcher(compiled, plan)
    tensors = [StubTensor(0x10000), StubTensor(0x20000), StubTensor(0x30000), 1024]
    arrays = [x, x.copy(), np.empty_like(x), 1024]
    print(f"torch-style tensors: {per_launch_us(lambda: launch((1, 1, 1), tensors)):6.2f} us per launch")
    print(f"NumPy arrays:        {per_launch_us(lambda: launch((1, 1, 1), arrays), n=2000):6.2f} us per launch")
    print(f"  (stream=int)       {per_launch_us(lambda: launch((1, 1, 1), tensors, stream=7)):6.2f} us per launch")


if __name__ == "__main__":
    main()
