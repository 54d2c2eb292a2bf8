"""Testing and benchmarking helpers with ``triton.testing``'s signatures and defaults:
``do_bench``, ``do_bench_cudagraph``, ``assert_close``, ``perf_report``/``Benchmark``/``Mark``.

``do_bench`` times on the CPU with ``time.perf_counter`` unless kernels run on CUDA
and torch or pycuda is importable; then it uses CUDA events and flushes the L2
cache before every repetition.  The GPU path is imported only when used.  The
differences from Triton are listed in docs/porting-from-triton.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .backends.interpreter import TORCH_ONLY_FLOATS
from .benchmark_report import Benchmark, Mark, perf_report

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
    if quantiles is not None:  # linear interpolation between the two nearest sorted times, as Triton
        if any(not 0 <= q <= 1 for q in quantiles):
            raise ValueError(f"quantiles must be in [0, 1], got {list(quantiles)}")
        found = [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
        return found[0] if len(found) == 1 else found
    if return_mode == "all":
        return times
    summaries: dict[str, Callable[[list[float]], float]] = {
        "min": min, "max": max, "mean": statistics.mean, "median": statistics.median}
    return summaries[return_mode](times)


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             grad_to_none: Sequence[Any] | None = None, quantiles: Sequence[float] | None = None,
             return_mode: str = "mean", device: str | None = None) -> Any:
    """Run ``fn`` repeatedly and return its time in milliseconds (Triton's signature and defaults).

    ``warmup`` and ``rep`` are time budgets in ms: the mean of five first calls decides
    how many warm-up and timed calls fit in them.  Returns the ``return_mode`` statistic
    of the timed calls (``mean``, the default, ``median``, ``min``, ``max``, or ``all``:
    the list) or, when ``quantiles`` is given, those quantiles (one float for one
    quantile).  ``grad_to_none``: tensors whose ``.grad`` is reset before every call.
    ``device`` (tiles only): ``"cpu"`` or ``"cuda"`` timing; default: the default backend's.
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    timer = _pick_timer(device)
    fn()
    timer.synchronize()
    estimate_calls = 5
    start = time.perf_counter()
    for _ in range(estimate_calls):
        timer.flush_cache()
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


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Sequence[Any] | None = None,
                       quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """``fn``'s time in ms from replays of a CUDA graph that calls it back to back (Triton's
    signature and defaults): no launch cost and no L2 flush between calls.  ``rep`` is the time
    budget of one replay in ms; ten replays are timed, each divided by its number of calls.
    Needs torch with a CUDA device (tiles' launches are captured on the capturing stream);
    without one it falls back to ``do_bench(fn, rep=rep, ...)``, which times launches too."""
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    try:
        import torch
        graphs = torch.cuda.is_available()
    except ImportError:
        graphs = False
    if not graphs:
        return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode)

    def captured(calls: int) -> Any:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                for tensor in grad_to_none or ():
                    tensor.grad = None
                fn()
        return graph

    def replay_ms(graph: Any) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    with torch.cuda.stream(torch.cuda.Stream()):
        fn()  # compiles and loads outside the capture
        torch.cuda.synchronize()
        estimate_calls = 5
        estimate_ms = max(replay_ms(captured(estimate_calls)) / estimate_calls, 1e-6)
        calls = max(1, int(rep / estimate_ms))
        graph = captured(calls)
        replay_ms(graph)  # warm-up
        times = [replay_ms(graph) / calls for _ in range(10)]
    return _summarize(times, quantiles, return_mode)


# ---------------------------------------------------------------- assert_close


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        if str(x.dtype).removeprefix("torch.") in TORCH_ONLY_FLOATS:
            x = x.float()  # exact: NumPy has no such type
        return np.asarray(x.numpy())
    if hasattr(x, "get"):  # pycuda / pyopencl arrays
        return np.asarray(x.get())
    return np.asarray(x)


def _tolerance(value: Any, default: float, dtype: Any) -> float:
    if value is None:
        return default
    return float(value(dtype)) if callable(value) else float(value)


def assert_close(x: Any, y: Any, atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
    """Raise AssertionError unless ``|x - y| <= atol + rtol * |y|`` everywhere (``x``: the actual
    values, ``y``: the expected ones; Triton's signature).

    Defaults ``atol=1e-2``, ``rtol=0``; either may be a function of ``x``'s dtype, as in
    Triton.  NaN matches NaN and infinities must match exactly.  Shapes must be equal,
    unless one side is a scalar or both have one element.  Integers are compared exactly
    (Triton compares them as float64).  The message gives the number of mismatches, the
    worst one's index and both values there.
    """
    dtype = getattr(x, "dtype", None)
    a, e = _to_numpy(x), _to_numpy(y)
    dtype = a.dtype if dtype is None else dtype
    atol_value = _tolerance(atol, 1e-2, dtype)
    rtol_value = _tolerance(rtol, 0.0, dtype)
    if a.shape != e.shape:
        if not (a.ndim == 0 or e.ndim == 0 or (a.size == 1 and e.size == 1)):
            raise AssertionError(f"{err_msg}shape mismatch: x {a.shape} vs y {e.shape}")
        a, e = np.broadcast_arrays(a, e)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":  # exact, even beyond 2**53
        ai, ei = a.astype(object), e.astype(object)
        diff = np.abs(ai - ei).astype(np.float64)
        ok = np.asarray(np.abs(ai - ei) <= atol_value + rtol_value * np.abs(ei), dtype=bool)
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(af - ef)
            ok = (diff <= atol_value + rtol_value * np.abs(ef)) | (np.isnan(af) & np.isnan(ef)) \
                | (np.isinf(ef) & (af == ef))
    if ok.all():
        return
    bad = ~ok
    excess = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), ok.shape) if ok.shape else ()
    worst_index = tuple(int(i) for i in worst)
    raise AssertionError(
        f"{err_msg}{int(bad.sum())} of {ok.size} elements differ (atol={atol_value}, rtol={rtol_value}); "
        f"worst at index {worst_index}: x {a[worst_index]!r}, y {e[worst_index]!r} "
        f"(|diff| = {diff[worst_index]})")


__all__ = ["Benchmark", "Mark", "assert_close", "do_bench", "do_bench_cudagraph", "perf_report"]
