"""Testing and benchmarking helpers: ``do_bench``, ``assert_close``, ``perf_report``.

``do_bench`` times on the CPU with ``time.perf_counter`` unless kernels run on CUDA
and torch or pycuda is importable; then it uses CUDA events and flushes the L2
cache before every repetition.  The GPU path is imported only when used.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

L2_FLUSH_BYTES = 256 * 1024 * 1024
RETURN_MODES = ("min", "max", "mean", "median", "all")


# ---------------------------------------------------------------- timers


class _CPUTimer:
    """Times ``fn`` with the wall clock; nothing to flush."""

    def synchronize(self) -> None:
        pass

    def flush_cache(self) -> None:
        pass

    def time_ms(self, fn: Callable[[], Any]) -> float:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3


class _TorchCUDATimer:
    def __init__(self) -> None:
        import torch
        self.torch = torch
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def flush_cache(self) -> None:
        self.flush_buffer.zero_()

    def time_ms(self, fn: Callable[[], Any]) -> float:
        start = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))


class _PyCUDATimer:
    def __init__(self) -> None:
        import atexit

        import pycuda.driver as cuda
        # the primary context (where tiles launches), not a new one as pycuda.autoinit makes:
        # events only order with kernels of their own context
        cuda.init()
        context = cuda.Device(0).retain_primary_context()
        context.push()
        atexit.register(context.pop)
        self.cuda = cuda
        self.flush_buffer = cuda.mem_alloc(L2_FLUSH_BYTES)

    def synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def flush_cache(self) -> None:
        self.cuda.memset_d32(self.flush_buffer, 0, L2_FLUSH_BYTES // 4)

    def time_ms(self, fn: Callable[[], Any]) -> float:
        start, end = self.cuda.Event(), self.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.time_till(end))


def _pick_timer(device: str | None) -> Any:
    """The timer for ``device`` ("cpu", "cuda"), or for the default backend when None."""
    if device is None:
        from .backends import registry
        try:
            device = "cuda" if registry.default().name == "cuda" else "cpu"
        except Exception:
            device = "cpu"
    if device == "cpu":
        return _CPUTimer()
    for timer in (_TorchCUDATimer, _PyCUDATimer):
        try:
            return timer()
        except Exception:  # that library is missing or has no CUDA device
            continue
    return _CPUTimer()


# ---------------------------------------------------------------- do_bench


def _summarize(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    if quantiles is not None:
        found = [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
        return found[0] if len(found) == 1 else found
    if return_mode == "all":
        return times
    summaries: dict[str, Callable[[list[float]], float]] = {
        "min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}
    return summaries[return_mode](times)


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             grad_to_none: Sequence[Any] | None = None, quantiles: Sequence[float] | None = None,
             return_mode: str = "median", device: str | None = None) -> Any:
    """Run ``fn`` repeatedly and return its time in milliseconds.

    ``warmup`` and ``rep`` are time budgets in ms (as in Triton): a first estimate of
    one call decides how many warm-up and timed calls fit in them.  Returns the
    ``return_mode`` statistic (``min``/``max``/``mean``/``median``/``all``) or, with
    ``quantiles``, those quantiles.  ``grad_to_none``: tensors whose ``.grad`` is
    reset before every call.
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    timer = _pick_timer(device)
    fn()
    timer.synchronize()
    estimate_calls = 5
    timer.flush_cache()
    start = time.perf_counter()
    for _ in range(estimate_calls):
        fn()
    timer.synchronize()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / estimate_calls, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        for tensor in grad_to_none or ():
            tensor.grad = None
        timer.flush_cache()
        times.append(timer.time_ms(fn))
    timer.synchronize()
    return _summarize(times, quantiles, return_mode)


# ---------------------------------------------------------------- assert_close


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return np.asarray(x.numpy())
    if hasattr(x, "get"):  # pycuda / pyopencl arrays
        return np.asarray(x.get())
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """Raise AssertionError unless ``|actual - expected| <= atol + rtol * |expected|`` everywhere.

    NaN matches NaN and infinities must match exactly.  Defaults: ``atol=1e-2``,
    ``rtol=0`` (Triton's).  The message gives the number of mismatches, the worst
    one's index and both values there.
    """
    a, e = _to_numpy(actual), _to_numpy(expected)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    if a.shape != e.shape:
        try:
            a, e = np.broadcast_arrays(a, e)
        except ValueError:
            raise AssertionError(f"{err_msg}shape mismatch: actual {a.shape} vs expected {e.shape}") from None
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":  # exact, even beyond 2**53
        ai, ei = a.astype(object), e.astype(object)
        diff = np.abs(ai - ei).astype(np.float64)
        ok = np.asarray(np.abs(ai - ei) <= atol + rtol * np.abs(ei), dtype=bool)
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(af - ef)
            ok = (diff <= atol + rtol * np.abs(ef)) | (np.isnan(af) & np.isnan(ef)) \
                | (np.isinf(ef) & (af == ef))
    if ok.all():
        return
    bad = ~ok
    excess = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), ok.shape) if ok.shape else ()
    worst_index = tuple(int(i) for i in worst)
    raise AssertionError(
        f"{err_msg}{int(bad.sum())} of {ok.size} elements differ (atol={atol}, rtol={rtol}); "
        f"worst at index {worst_index}: actual {a[worst_index]!r}, expected {e[worst_index]!r} "
        f"(|diff| = {diff[worst_index]})")


# ---------------------------------------------------------------- perf_report


@dataclass
class Benchmark:
    """One benchmark sweep: a table whose rows are ``x_vals`` and columns ``line_vals``."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list[tuple[str, str]] | None = None


class Mark:
    """A benchmark function with its sweeps; ``run()`` measures, prints and plots."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks if isinstance(benchmarks, list) else [benchmarks]

    def _measure(self, bench: Benchmark) -> tuple[list[str], list[list[Any]]]:
        columns = [*bench.x_names[:1], *bench.line_names]
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row: list[Any] = [xs[0]]
            for line in bench.line_vals:
                result = self.fn(**x_args, **{bench.line_arg: line}, **bench.args)
                row.append(result[0] if isinstance(result, (list, tuple)) else result)
            rows.append(row)
        return columns, rows

    def run(self, print_data: bool = False, save_path: str = "", show_plots: bool = False) -> list[Any]:
        """Measure every sweep; print the tables, and write CSV and PNG into ``save_path``."""
        tables = []
        for bench in self.benchmarks:
            columns, rows = self._measure(bench)
            tables.append((columns, rows))
            if print_data:
                print(f"{bench.plot_name}:")
                print(format_table(columns, rows))
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                _write_csv(os.path.join(save_path, f"{bench.plot_name}.csv"), columns, rows)
                _plot(bench, columns, rows, save_path, show_plots)
        return tables


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorator: ``@perf_report(Benchmark(...))`` turns a function into a ``Mark``."""
    return lambda fn: Mark(fn, benchmarks)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else str(v)
    text = [[str(c) for c in columns], *([cell(v) for v in r] for r in rows)]
    widths = [max(len(line[i]) for line in text) for i in range(len(columns))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in text)


def _write_csv(path: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with open(path, "w") as f:
        f.write(",".join(columns) + "\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")


def _plot(bench: Benchmark, columns: Sequence[str], rows: Sequence[Sequence[Any]], save_path: str,
          show: bool) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("tiles.testing: matplotlib is not installed; skipping the plot", file=sys.stderr)
        return
    fig, ax = plt.subplots()
    xs = [r[0] for r in rows]
    for i, name in enumerate(columns[1:], start=1):
        style = bench.styles[i - 1] if bench.styles else None
        kwargs = {"color": style[0], "linestyle": style[1]} if style else {}
        ax.plot(xs, [r[i] for r in rows], label=name, **kwargs)
    ax.set_xlabel(bench.xlabel or columns[0])
    ax.set_ylabel(bench.ylabel)
    if bench.x_log:
        ax.set_xscale("log")
    if bench.y_log:
        ax.set_yscale("log")
    ax.legend()
    ax.set_title(bench.plot_name)
    fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()
    plt.close(fig)
