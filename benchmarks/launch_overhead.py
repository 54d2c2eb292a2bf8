"""Host cost of one launch: tiles (cuda) vs Triton, same kernels, same process.

Times launches of kernels that do almost nothing (one program) with a host clock: ``host`` is
the time to issue one (the Python launch path plus the driver's cuLaunchKernel), taken over
windows of 100 launches that each start on an idle GPU; ``+sync`` is N back-to-back launches
and a synchronize, divided by N (this includes waiting for the GPU once the driver's queue is
full: on the H200 machine, 20000 back-to-back bare ctypes cuLaunchKernel calls, no Python
launch path, took 7.2 us each).
Three kernel shapes: the 5-argument vector add, an 8-argument kernel with two scalars and two
constexprs (what library kernels look like), and a 10-argument layer norm; then the add with a grid
function (``grid=lambda meta: ...``, as most Triton code launches), the 8-argument kernel under a
stack of three ``@heuristics`` (as Mamba's kernels are written) and the add under ``@autotune``
with one configuration (the tuned choice served from its cache on every launch).  ``tiles host`` passes
``backend="cuda"``, ``default`` leaves the backend to the registry; both are served by the kernel's
native hot launch (``backends/cuda/launch/hot_launch.py``; the script says if it was not installed).  The
last two columns switch parts off for comparison: ``no hot`` (``hot_launch.enabled = False``: the
Python launch function binds, keys and calls the direct launch) and ``ctypes`` (also
``trampoline.enabled = False``: the launcher calls ``cuCtxGetCurrent`` and ``cuLaunchKernel``
through ctypes).
``launch_floor.py`` times what lies under these rows.  Run on a GPU machine:

    python benchmarks/launch_overhead.py [-n 2000] [--repeats 7] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import KERNELS, load_kernels  # noqa: E402

EXTRA = '''

@jit
def bias_act_kernel(x_ptr, w_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr, RELU: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + row * stride + offs, mask=mask) * tl.load(w_ptr + offs, mask=mask) + eps
    if RELU:
        v = tl.maximum(v, 0.0)
    tl.store(out_ptr + row * stride + offs, v, mask=mask)


@jitlib.heuristics({"HAS_W": lambda args: args["w_ptr"] is not None})
@jitlib.heuristics({"RELU": lambda args: args["eps"] > 0})
@jitlib.heuristics({"BLOCK": lambda args: jitlib.next_power_of_2(args["n"])})
@jit
def bias_act_heuristics_kernel(x_ptr, w_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr, RELU: tl.constexpr,
                               HAS_W: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + row * stride + offs, mask=mask)
    if HAS_W:
        v = v * tl.load(w_ptr + offs, mask=mask)
    v = v + eps
    if RELU:
        v = tl.maximum(v, 0.0)
    tl.store(out_ptr + row * stride + offs, v, mask=mask)


@jitlib.autotune(configs=[jitlib.Config({"BLOCK": 1024}, num_warps=4)], key=["n"])
@jit
def add_autotuned_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
'''


def per_launch_us(fn, sync, n: int, repeats: int, window: int) -> tuple[float, float]:
    """(host issue time, time including the GPU finishing them), us per launch, medians.

    The host time is taken over windows of ``window`` launches, each started on an idle GPU:
    a few hundred launches fill the driver's launch queue, after which every launch waits for the
    GPU to retire one, and the clock would measure the GPU, not the launch path."""
    for _ in range(200):
        fn()
    sync()
    issue, total = [], []
    for _ in range(repeats):
        for _ in range(max(1, n // window)):
            sync()
            t = time.perf_counter()
            for _ in range(window):
                fn()
            issue.append((time.perf_counter() - t) / window * 1e6)
        sync()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        total.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(issue), statistics.median(total)


def print_rows(rows, sync, opts, width: int) -> None:
    """Call each row once (a non-zero int status ends the run, naming the row), then print its
    ``per_launch_us`` with ``opts``' n, repeats and window."""
    for name, fn in rows.items():
        status = fn()
        if type(status) is int and status:
            sys.exit(f"{name}: status {status}")
    print(f"{'call':{width}s} {'host':>8s} {'+sync':>8s}  (us per call)")
    for name, fn in rows.items():
        host, total = per_launch_us(fn, sync, opts.n, opts.repeats, opts.window)
        print(f"{name:{width}s} {host:8.2f} {total:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--window", type=int, default=100, help="launches per host-time window")
    parser.add_argument("--rounds", type=int, default=3, help="passes over every row (medians printed)")
    opts = parser.parse_args()
    import torch
    tmp = Path(tempfile.mkdtemp())
    source = KERNELS + EXTRA
    tk = load_kernels("tiles", tmp, source, "launch_kernels")
    tr = load_kernels("triton", tmp, source, "launch_kernels")
    g = torch.Generator(device="cpu").manual_seed(0)
    x, y, w = (torch.randn(1024, generator=g).cuda() for _ in range(3))
    out = torch.empty_like(x)
    ln_w, ln_b = torch.randn(1024, generator=g).cuda(), torch.randn(1024, generator=g).cuda()
    ln_y = torch.empty_like(x)
    mean, rstd = torch.empty(1, device="cuda"), torch.empty(1, device="cuda")

    def add(lib, **kw):
        return lambda: lib.add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, **kw)

    def add_grid_function(lib, **kw):
        def grid(meta):
            return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
        return lambda: lib.add_kernel[grid](x, y, out, 1024, BLOCK=1024, **kw)

    def bias_act(lib, **kw):
        return lambda: lib.bias_act_kernel[(1,)](x, w, out, 1024, 1000, 1e-5, BLOCK=1024, RELU=True, **kw)

    def bias_act_heuristics(lib, **kw):
        return lambda: lib.bias_act_heuristics_kernel[(1,)](x, w, out, 1024, 1000, 1e-5, **kw)

    def add_autotuned(lib, **kw):
        def grid(meta):
            return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
        return lambda: lib.add_autotuned_kernel[grid](x, y, out, 1024, **kw)

    def layer_norm(lib, **kw):
        return lambda: lib.layer_norm_kernel[(1,)](x, ln_y, ln_w, ln_b, mean, rstd, 1024, 1024, 1e-5,
                                                   BLOCK=1024, **kw)

    checks = {
        "add (5 args)": lambda: torch.testing.assert_close(out, x + y),
        "bias+relu (8 args: 3 tensors, 3 scalars, 2 constexprs)":
            lambda: torch.testing.assert_close(out[:1000], torch.relu(x[:1000] * w[:1000] + 1e-5)),
        "layer norm (10 args)": lambda: torch.testing.assert_close(
            ln_y, torch.nn.functional.layer_norm(x, (1024,), ln_w, ln_b, 1e-5), rtol=1e-4, atol=1e-4),
        "add, grid function": lambda: torch.testing.assert_close(out, x + y),
        "bias+relu under 3 stacked @heuristics":
            lambda: torch.testing.assert_close(out[:1000], torch.relu(x[:1000] * w[:1000] + 1e-5)),
        "add under @autotune (1 config, grid function)": lambda: torch.testing.assert_close(out, x + y),
    }
    sync = torch.cuda.synchronize
    from tiles.backends.cuda.launch import hot_launch, trampoline

    def jit_function(kernel_name: str):
        kernel = getattr(tk, kernel_name)
        while not hasattr(kernel, "_launches"):  # under @heuristics / @autotune
            kernel = kernel.fn
        return kernel

    def tiles_launches(kernel_name: str, native: bool, hot: bool) -> None:
        """Launch plans built afresh, with or without the native trampoline and hot launch."""
        trampoline.enabled = native
        hot_launch.enabled = hot
        jit_function(kernel_name)._launches.clear()

    def measure(kernel_name: str, fn, check) -> tuple[float, float]:
        result = per_launch_us(fn, sync, opts.n, opts.repeats, opts.window)
        check()
        out.zero_()
        kernel = jit_function(kernel_name)
        if hot_launch.enabled and type(kernel._fast_launch).__name__ != "builtin_function_or_method":
            print(f"({kernel_name}: the hot launch was not installed: {hot_launch.unavailable_reason()})")
        return result

    print(f"{'kernel':58s} {'triton host':>12s} {'tiles host':>11s} {'default':>8s} {'triton +sync':>12s}"
          f" {'tiles +sync':>11s} {'no hot':>7s} {'ctypes':>7s}  (us per launch, host issue time but +sync)")
    kernel_names = ("add_kernel", "bias_act_kernel", "layer_norm_kernel", "add_kernel", "bias_act_heuristics_kernel",
                    "add_autotuned_kernel")
    makers = (add, bias_act, layer_norm, add_grid_function, bias_act_heuristics, add_autotuned)

    def row(check, make, kernel_name: str) -> tuple[float, ...]:
        triton_host, triton_total = per_launch_us(make(tr), sync, opts.n, opts.repeats, opts.window)
        check()
        out.zero_()
        tiles_launches(kernel_name, native=False, hot=False)
        ctypes_host, _ = measure(kernel_name, make(tk, backend="cuda"), check)
        tiles_launches(kernel_name, native=True, hot=False)
        python_host, _ = measure(kernel_name, make(tk, backend="cuda"), check)
        tiles_launches(kernel_name, native=True, hot=True)
        tiles_host, tiles_total = measure(kernel_name, make(tk, backend="cuda"), check)
        default_host, _ = measure(kernel_name, make(tk), check)
        return triton_host, tiles_host, default_host, triton_total, tiles_total, python_host, ctypes_host

    # every row measured in each of --rounds passes, the passes one after another, so that a slow
    # moment of the host lands in one pass of every column rather than in one column
    passes = [[row(check, make, kernel_name) for check, make, kernel_name in zip(checks.values(), makers, kernel_names)]
              for _ in range(opts.rounds)]
    for i, name in enumerate(checks):
        cols = [statistics.median(p[i][c] for p in passes) for c in range(7)]
        print(f"{name:58s} {cols[0]:12.2f} {cols[1]:11.2f} {cols[2]:8.2f} {cols[3]:12.2f}"
              f" {cols[4]:11.2f} {cols[5]:7.2f} {cols[6]:7.2f}")
    print(f"(medians of {opts.rounds} passes; tiles host per pass, add: "
          f"{', '.join(f'{p[0][1]:.2f}' for p in passes)})")
    if trampoline.unavailable_reason() is not None:
        print(f"(no native trampoline here: {trampoline.unavailable_reason()})")
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
