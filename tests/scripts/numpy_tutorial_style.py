"""A whole script in the style of Triton's first tutorials, on NumPy arrays: driver queries at
import, a wrapper, an occupancy calculation from ``kernel.warmup``, ``perf_report`` and a
``__main__`` block.  tests/scripts/test_scripts.py runs it as a program."""

import sys

import numpy as np

import tiles as triton
import tiles.language as tl
from tiles.runtime import driver

TARGET = triton.runtime.driver.active.get_current_target()
PROPS = driver.active.utils.get_device_properties(driver.active.get_current_device())


def is_hip():
    return TARGET.backend == "hip"


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def saxpy(a, x, y):
    out = np.empty_like(x)
    n = out.size
    saxpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, a, n, BLOCK_SIZE=256)
    return out


@triton.jit
def logsumexp_rows(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        m = tl.max(x, axis=0)
        tl.store(out_ptr + row, m + tl.log(tl.sum(tl.exp(x - m), axis=0)))


def logsumexp(x):
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps, num_stages = 4, 2
    out = np.empty(n_rows, dtype=x.dtype)
    kernel = logsumexp_rows.warmup(out, x, x.strides[0] // x.itemsize, n_rows, n_cols, BLOCK_SIZE=block,
                                   num_stages=num_stages, num_warps=num_warps, grid=(1,))
    kernel._init_handles()
    occupancy = PROPS["max_num_regs"] // (kernel.n_regs * PROPS["warpSize"] * num_warps)
    occupancy = min(occupancy, PROPS["max_shared_mem"] // kernel.metadata.shared)
    programs = min(PROPS["multiprocessor_count"] * occupancy, n_rows)
    kernel[(programs, 1, 1)](out, x, x.strides[0] // x.itemsize, n_rows, n_cols, block, num_stages)
    return out


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["n"], x_vals=[1000, 3001], line_arg="provider", line_vals=["tiles", "numpy"],
    line_names=["tiles", "NumPy"], styles=[("blue", "-"), ("green", "-")], ylabel="GB/s",
    plot_name="saxpy", args={}))
def bench(n, provider):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    fn = (lambda: saxpy(2.0, x, y)) if provider == "tiles" else (lambda: 2.0 * x + y)
    ms, lo, hi = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8], warmup=1, rep=5)
    gbps = lambda t: 3 * x.nbytes * 1e-9 / (t * 1e-3)  # noqa: E731
    return gbps(ms), gbps(hi), gbps(lo)


if __name__ == "__main__":
    rng = np.random.default_rng(int(sys.argv[1]))
    x = rng.standard_normal(3001).astype(np.float32)
    y = rng.standard_normal(3001).astype(np.float32)
    triton.testing.assert_close(saxpy(np.float32(0.5), x, y), np.float32(0.5) * x + y)
    m = rng.standard_normal((67, 300)).astype(np.float32) * 4
    ref = np.log(np.exp(m - m.max(1, keepdims=True)).sum(1)) + m.max(1)
    triton.testing.assert_close(logsumexp(m), ref, rtol=1e-5, atol=1e-5)
    bench.run(print_data=True, show_plots=False)
    print(f"target={TARGET.backend} hip={is_hip()} ok")
