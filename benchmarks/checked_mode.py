"""What checked mode costs: the same kernels with ``debug=False`` and ``debug=True``, side by side.

Each timed call is one launch plus a wait for it (checked mode reads its error record after
every launch, so it always waits; the plain column waits too, to compare like with like).
Arguments live on the device (pyopencl arrays on OpenCL, torch CUDA tensors on CUDA), so the
figures are kernel time plus launch cost, not host copies.  Off and on alternate within each
repeat; the figure is the median over ``--repeats`` calls after ``--warmup`` calls.

    python benchmarks/checked_mode.py --backend opencl      # pocl in CI / on a laptop
    python benchmarks/checked_mode.py --backend cuda        # needs torch and pycuda
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tiles  # noqa: E402
import tiles.language as tl  # noqa: E402


def _vector_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


def _softmax(x, out, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


def _matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(pa, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0),
                      tl.load(pb, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0))
        pa += BK
        pb += BK * N
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


KERNELS = {name: (tiles.jit(debug=False)(fn), tiles.jit(debug=True)(fn))
           for name, fn in (("vector_add", _vector_add), ("softmax", _softmax), ("matmul", _matmul))}


class Device:
    """Host arrays to device arrays and back, and a wait, for one backend."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        if backend == "opencl":
            import pyopencl.array as cla

            from tiles.backends.opencl import runtime
            self.ctx, self.queue, dev = runtime.device()
            self.cla = cla
            self.name = f"{dev.platform.name} / {dev.name}"
        else:
            import torch
            self.torch = torch
            self.name = torch.cuda.get_device_name()

    def put(self, a: np.ndarray) -> Any:
        if self.backend == "opencl":
            return self.cla.to_device(self.queue, a)
        return self.torch.from_numpy(a).cuda()

    def get(self, a: Any) -> np.ndarray:
        return a.get() if self.backend == "opencl" else a.cpu().numpy()

    def wait(self) -> None:
        if self.backend == "opencl":
            self.queue.finish()
        else:
            self.torch.cuda.synchronize()


def workloads(dev: Device, scale: int) -> dict[str, tuple[tuple[int, ...], list[Any], dict[str, int], int]]:
    """name -> (grid, arguments, constexprs, index of the output argument)."""
    g = np.random.default_rng(0)
    n = (1 << 20) * scale
    rows, cols = 512 * scale, 1000
    m = 256 if scale == 1 else 1024
    f32 = np.float32
    return {
        "vector_add": ((-(-n // 1024),), [dev.put(g.standard_normal(n).astype(f32)),
                                          dev.put(g.standard_normal(n).astype(f32)),
                                          dev.put(np.zeros(n, f32)), n], {"BLOCK": 1024}, 2),
        "softmax": ((rows,), [dev.put(g.standard_normal((rows, cols)).astype(f32)),
                              dev.put(np.zeros((rows, cols), f32)), cols, cols], {"BLOCK": 1024}, 1),
        "matmul": ((m // 32, m // 32), [dev.put(g.standard_normal((m, m)).astype(f32)),
                                        dev.put(g.standard_normal((m, m)).astype(f32)),
                                        dev.put(np.zeros((m, m), f32)), m, m, m],
                   {"BM": 32, "BN": 32, "BK": 32}, 2),
    }


def time_pair(calls: tuple[Callable[[], None], Callable[[], None]], wait: Callable[[], None],
              warmup: int, repeats: int) -> tuple[float, float]:
    for _ in range(warmup):
        for call in calls:
            call()
            wait()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for call, times in zip(calls, samples):
            start = time.perf_counter()
            call()
            wait()
            times.append(time.perf_counter() - start)
    return statistics.median(samples[0]) * 1e3, statistics.median(samples[1]) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="opencl", choices=["opencl", "cuda"])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--scale", type=int, default=1, help="problem size factor (use 16 on a GPU)")
    args = parser.parse_args()
    dev = Device(args.backend)
    print(f"# checked mode cost on {args.backend} ({dev.name}); {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}; median of {args.repeats} after {args.warmup} warm-up calls")
    print("| kernel | off ms | on ms | on/off |\n|---|---:|---:|---:|")
    for name, (grid, kargs, meta, out_index) in workloads(dev, args.scale).items():
        plain, checked = KERNELS[name]
        results = []
        for kernel in (plain, checked):  # compile, and check that both give the same output
            kernel[grid](*kargs, backend=args.backend, **meta)
            dev.wait()
            results.append(dev.get(kargs[out_index]).copy())
        if not np.array_equal(results[0], results[1]):
            raise SystemExit(f"{name}: checked mode changed the result")
        calls = tuple((lambda k=k: k[grid](*kargs, backend=args.backend, **meta)) for k in (plain, checked))
        off, on = time_pair(calls, dev.wait, args.warmup, args.repeats)  # type: ignore[arg-type]
        print(f"| {name} {'x'.join(map(str, grid))} programs | {off:.3f} | {on:.3f} | {on / off:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
