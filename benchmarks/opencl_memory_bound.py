"""tiles on OpenCL vs a hand-written float4 OpenCL kernel (and Triton/torch on CUDA), one process.

Kernels are the memory-bound ones of ``memory_bound.py`` (same tiles source).  OpenCL
times: median over repeats of (20 back-to-back launches, then queue.finish) / 20, after
warm-up, on pyopencl arrays (no copies).  Run on a GPU machine with NVIDIA's OpenCL:

    python benchmarks/opencl_memory_bound.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels, next_pow2, softmax_warps  # noqa: E402

HAND_ADD = """
__kernel void add4(__global const float4 *x, __global const float4 *y, __global float4 *out) {
    size_t i = get_global_id(0);
    out[i] = x[i] + y[i];
}
"""


def time_queue(fn, queue, launches: int = 20, repeats: int = 15) -> float:
    for _ in range(3):
        fn()
    queue.finish()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(launches):
            fn()
        queue.finish()
        samples.append((time.perf_counter() - t) / launches)
    return statistics.median(samples)


def main() -> None:
    import pyopencl as cl
    import pyopencl.array as cla

    from tiles.backends.opencl import runtime
    ctx, queue, dev = runtime.device()
    print(f"OpenCL device: {dev.platform.name} / {dev.name}")
    tk = load_kernels("tiles", Path(tempfile.mkdtemp()))
    rng = np.random.default_rng()
    rows = []

    n = 1 << 28
    xh, yh = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x, y = cla.to_device(queue, xh), cla.to_device(queue, yh)
    out = cla.empty_like(x)
    grid = (n // 1024,)
    tiles_add = lambda: tk.add_kernel[grid](x, y, out, n, BLOCK=1024, num_warps=4, backend="opencl")  # noqa: E731
    tiles_add()
    assert np.array_equal(out.get(), xh + yh)
    prog = cl.Program(ctx, HAND_ADD).build()
    hand = prog.add4
    hand_add = lambda: hand(queue, (n // 4,), (256,), x.data, y.data, out.data)  # noqa: E731
    nbytes = 3 * n * 4
    rows.append(("add fp32", "2^28", nbytes / time_queue(tiles_add, queue) / 1e9,
                 nbytes / time_queue(hand_add, queue) / 1e9))

    m, c = 16384, 8192
    sh = rng.standard_normal((m, c), dtype=np.float32)
    s = cla.to_device(queue, sh)
    so = cla.empty_like(s)
    block = next_pow2(c)
    tiles_soft = lambda: tk.softmax_kernel[(m,)](so, s, c, c, c, BLOCK=block,  # noqa: E731
                                                  num_warps=softmax_warps(block), backend="opencl")
    tiles_soft()
    ref = np.exp(sh - sh.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(so.get(), ref, rtol=1e-4, atol=1e-6)
    rows.append(("softmax fp32", f"{m}x{c}", 2 * m * c * 4 / time_queue(tiles_soft, queue) / 1e9, float("nan")))

    print("| kernel | shape | tiles-opencl GB/s | hand-written float4 OpenCL GB/s |")
    for name, shape, t, h in rows:
        print(f"| {name} | {shape} | {t:.0f} | {h:.0f} |")


if __name__ == "__main__":
    main()
