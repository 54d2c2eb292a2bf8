"""``@tiles.autotune``: time a list of configurations, remember the fastest per tuning key.

Triton's semantics: the tuning key is the values of the ``key`` arguments plus
the dtypes of every array argument (plus the backend here).  Each configuration's
meta-parameters are passed as constexpr keywords (the grid function sees them),
its ``num_warps``/``num_stages`` as options.  A configuration that fails to
compile, or that a backend refuses for lack of resources at launch, is skipped
with its reason (printed with ``TILES_PRINT_AUTOTUNING=1``); when every one fails,
``AutotuneError`` lists the reasons.  Hooks follow Triton: a ``pre_hook``/``post_hook``
given to ``autotune`` replaces the default ones that do ``reset_to_zero``/``restore_value``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import config as env
from .. import progress
from ..backends import registry
from ..backends.base import CompiledKernel
from ..backends.launch_facts import DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS
from ..core.errors import KernelRuntimeError, TilesError
from .heuristics import named_arguments, unwrap
from .jit import Grid, KernelInterface


class AutotuneError(TilesError):
    """No configuration could run."""


class Config:
    """One candidate: constexpr meta-parameters plus launch options (Triton's ``Config``)."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = DEFAULT_NUM_WARPS,
                 num_stages: int = DEFAULT_NUM_STAGES, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable[[dict[str, Any]], Any] | None = None,
                 ir_override: str | None = None) -> None:
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas  # launch hints: see docs/porting-from-triton.md, "Launch options"
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override

    def all_kwargs(self) -> dict[str, Any]:
        """The meta-parameters and the options that are set, as launch keywords."""
        options = (("num_warps", self.num_warps), ("num_ctas", self.num_ctas), ("num_stages", self.num_stages),
                   ("maxnreg", self.maxnreg), ("ir_override", self.ir_override))
        return {**self.kwargs, **{k: v for k, v in options if v is not None}}

    def launch_kwargs(self) -> dict[str, Any]:
        """``all_kwargs`` without ``num_ctas=1``, which changes nothing: a launch keyword the
        kernel does not take sends every launch down the general binding path."""
        kwargs = self.all_kwargs()
        if kwargs.get("num_ctas") == 1:
            del kwargs["num_ctas"]
        return kwargs

    def _identity(self) -> tuple[Any, ...]:
        return (tuple(sorted((k, repr(v)) for k, v in self.all_kwargs().items())), self.pre_hook)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        fields = {**self.kwargs, "num_warps": self.num_warps, "num_ctas": self.num_ctas,
                  "num_stages": self.num_stages, "maxnreg": self.maxnreg}
        return ", ".join(f"{k}: {v}" for k, v in fields.items())

    def __repr__(self) -> str:
        return f"Config({self})"


# ---------------------------------------------------------------- protecting in-place arguments


def _zero(array: Any) -> None:
    if hasattr(array, "zero_"):
        array.zero_()
    elif hasattr(array, "fill"):
        array.fill(0)
    else:
        array[...] = 0


def _snapshot(array: Any) -> Any:
    if hasattr(array, "clone"):
        return array.clone()
    if hasattr(array, "get") and not hasattr(array, "__array_interface__"):
        return array.get()  # pycuda / pyopencl: keep a host copy
    return array.copy()


def _restore(array: Any, saved: Any) -> None:
    if hasattr(array, "copy_"):
        array.copy_(saved)
    elif hasattr(array, "set") and not hasattr(array, "__array_interface__"):
        array.set(saved)
    else:
        array[...] = saved


def _is_resource_error(error: Exception) -> bool:
    text = f"{type(error).__name__}: {error}".lower()
    return any(s in text for s in ("outofresources", "out of resources", "too many resources",
                                   "shared memory", "registers"))


# ---------------------------------------------------------------- the autotuner


class Autotuner(KernelInterface):
    """A kernel launched with the fastest of ``configs`` for each tuning key (Triton's ``Autotuner``,
    same constructor)."""

    def __init__(self, fn: Any, arg_names: Sequence[str], configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
                 prune_configs_by: dict[str, Any] | None = None, warmup: float | None = None,
                 rep: float | None = None, use_cuda_graph: bool = False,
                 do_bench: Callable[..., Any] | None = None, cache_results: bool = False) -> None:
        self.fn = fn
        self.jit_fn = unwrap(fn)
        self.arg_names = list(arg_names) if arg_names else self.jit_fn.arg_names
        self.__name__ = self.jit_fn.__name__
        self.base_fn = self.jit_fn.fn  # Triton's name: the Python function under the decorators
        self.configs = list(configs) or [Config({})]
        self.keys = list(key)
        prune = prune_configs_by or {}
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook: Callable[..., Any] = pre_hook or self._default_pre_hook
        self.post_hook: Callable[..., Any] = post_hook or self._default_post_hook
        self.warmup_ms = 25 if warmup is None else warmup
        self.rep_ms = 100 if rep is None else rep
        self.use_cuda_graph = use_cuda_graph  # time by CUDA graph replays (testing.do_bench_cudagraph)
        self.cache_results = cache_results
        self.custom_do_bench = do_bench
        self.cache: dict[tuple[Any, ...], Config] = {}
        self.best_config: Config | None = None
        self.configs_timings: dict[Config, float] | None = None
        self.failures: dict[Config, str] = {}
        self.bench_time_s = 0.0
        self._restore_copies: dict[int, dict[str, Any]] = {}  # per thread
        self._tuning_locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        for what, names in (("key", self.keys), ("reset_to_zero", self.reset_to_zero),
                            ("restore_value", self.restore_value)):
            unknown = [n for n in names if n not in self.jit_fn.arg_names]
            if unknown:
                raise ValueError(f"autotune of {self.__name__}: {what} names {', '.join(unknown)}, not among "
                                 f"its parameters ({', '.join(self.jit_fn.arg_names)})")

    # -- the default hooks: reset_to_zero and restore_value -------------------
    def _default_pre_hook(self, nargs: dict[str, Any], reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            if nargs.get(name) is not None:
                _zero(nargs[name])
        if not reset_only:
            self._restore_copies[threading.get_ident()] = {
                name: _snapshot(nargs[name]) for name in self.restore_value if nargs.get(name) is not None}

    def _default_post_hook(self, nargs: dict[str, Any], exception: BaseException | None = None) -> None:
        for name, saved in self._restore_copies.pop(threading.get_ident(), {}).items():
            _restore(nargs[name], saved)

    # -- keys and pruning ----------------------------------------------------
    def tuning_key(self, named: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        values = [_hashable(named[k]) for k in self.keys if k in named]
        dtypes = [_dtype_name(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return (*values, *dtypes, _backend_name(kwargs.get("backend")))

    def prune_configs(self, named: dict[str, Any], kwargs: dict[str, Any]) -> list[Config]:
        pruned = list(self.configs)
        if self.early_config_prune:
            pruned = list(self.early_config_prune(pruned, named, **kwargs))
            if not pruned:
                raise AutotuneError(f"autotune of {self.__name__}: early_config_prune returned no configuration")
        if self.perf_model:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(pruned) * top_k))
            if not isinstance(top_k, int):
                raise TypeError(f"prune_configs_by['top_k'] must be an int or a float <= 1, got {top_k!r}")
            if len(pruned) > top_k:
                estimate = {c: self.perf_model(**{**named, **kwargs, **c.all_kwargs()}) for c in pruned}
                pruned = sorted(pruned, key=lambda c: estimate[c])[:top_k]
        return pruned

    # -- timing ----------------------------------------------------------------
    def _bench_one(self, config: Config, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid,
                   named: dict[str, Any]) -> float | str:
        """The config's time in ms, or the reason it cannot run."""
        verbose = env.print_autotuning()
        if verbose:
            print(f"tiles autotuning {self.__name__} with config {config}")
        current = {**kwargs, **config.all_kwargs()}
        full_nargs = {**named, **current}
        hook_applied = [False]  # by the compile below; the first run then does not repeat it
        try:
            if config.pre_hook:  # it may set what the compile depends on (a descriptor's block_shape)
                config.pre_hook(full_nargs)
                hook_applied[0] = True
            self.fn.warmup(*args, **current)
        except Exception as e:  # any compile failure only rules this config out
            return _failed(config, f"{type(e).__name__}: {e}", verbose)

        def kernel_call() -> None:
            if config.pre_hook and not hook_applied[0]:
                config.pre_hook(full_nargs)
            hook_applied[0] = False
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, grid=grid, **current)
            except Exception as e:
                self.post_hook(full_nargs, exception=e)
                raise
            self.post_hook(full_nargs, exception=None)

        try:
            if self.custom_do_bench is None and _backend_name(kwargs.get("backend")) in ("interpreter", "step"):
                return _time_once(kernel_call)  # interpreter timings say nothing of a GPU's
            return _median(self._time(kernel_call))
        except KernelRuntimeError:
            raise
        except Exception as e:
            if _is_resource_error(e):
                return _failed(config, f"{type(e).__name__}: {e}", verbose)
            raise

    def _time(self, kernel_call: Callable[[], None]) -> Any:
        if self.custom_do_bench is None:
            from ..testing import do_bench, do_bench_cudagraph
            if self.use_cuda_graph:
                return do_bench_cudagraph(kernel_call, rep=self.rep_ms, quantiles=QUANTILES)
            return do_bench(kernel_call, warmup=self.warmup_ms, rep=self.rep_ms, quantiles=QUANTILES)
        if _takes_quantiles(self.custom_do_bench):
            return self.custom_do_bench(kernel_call, quantiles=QUANTILES)
        return self.custom_do_bench(kernel_call)

    def _tune(self, configs: list[Config], args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid,
              named: dict[str, Any]) -> Config:
        timings: dict[Config, float] = {}
        failures: dict[Config, str] = {}
        start = time.perf_counter()
        report = progress.Autotuning(self.__name__, len(configs))
        best: Config | None = None
        try:
            for i, config in enumerate(configs):
                report.trying(i, config)
                result = self._bench_one(config, args, kwargs, grid, named)
                report.finished(i, config, result)
                if isinstance(result, str):
                    failures[config] = result
                else:
                    timings[config] = result
            self.bench_time_s = time.perf_counter() - start
            self.configs_timings, self.failures = timings, failures
            if not timings:
                reasons = "\n".join(f"  {c}: {why}" for c, why in failures.items())
                raise AutotuneError(f"autotune of {self.__name__}: every configuration failed:\n{reasons}")
            best = min(timings, key=lambda c: timings[c])
        finally:
            report.close(best, timings.get(best) if best is not None else None, time.perf_counter() - start)
        return best

    def _lock_for(self, key: tuple[Any, ...]) -> threading.Lock:
        with self._locks_guard:
            return self._tuning_locks.setdefault(key, threading.Lock())

    # -- launch ----------------------------------------------------------------
    def run(self, *args: Any, grid: Grid, warmup: bool = False, **kwargs: Any) -> CompiledKernel:
        named = named_arguments(self.jit_fn, args, kwargs)
        conflicts = sorted(set(kwargs) & {k for c in self.configs for k in c.kwargs})
        if conflicts:
            raise ValueError(f"{self.__name__}: {', '.join(conflicts)} given at launch and also set "
                             "by the autotuning configs; remove one of them")
        config = self.configs[0]
        if len(self.configs) > 1:
            key = self.tuning_key(named, kwargs)
            if key not in self.cache:
                with self._lock_for(key):  # concurrent first launches tune once
                    if key not in self.cache:
                        self.cache[key] = self._choose(key, args, kwargs, grid, named)
            config = self.cache[key]
        self.best_config = config
        current = {**kwargs, **config.launch_kwargs()}
        if config.pre_hook:
            config.pre_hook({**named, **kwargs, **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, warmup=warmup, **current)

    def _choose(self, key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid,
                named: dict[str, Any]) -> Config:
        found = self._load_result(key) if self.cache_results else None
        if found is not None:
            how = "(from the disk cache)"
        else:
            pruned = self.prune_configs(named, kwargs)
            if len(pruned) == 1:
                return pruned[0]
            found = self._tune(pruned, args, kwargs, grid, named)
            self.pre_hook({**named, **kwargs, **found.all_kwargs()}, reset_only=True)
            if self.cache_results:
                self._save_result(key, found)
            how = f"after {self.bench_time_s:.2f}s"
        if env.print_autotuning():
            print(f"tiles autotuning for {self.__name__} finished {how}; best config: {found}")
        return found

    def warmup(self, *args: Any, **kwargs: Any) -> list[CompiledKernel]:
        """Compile every (pruned) configuration for these arguments without launching."""
        named = named_arguments(self.jit_fn, args, kwargs)
        return [self.fn.warmup(*args, **kwargs, **c.all_kwargs())
                for c in self.prune_configs(named, kwargs)]

    # -- results on disk -------------------------------------------------------
    def _result_path(self, key: tuple[Any, ...]) -> Any:
        from .cache import entry_path, source_fingerprint
        parts = [source_fingerprint(self.jit_fn), repr(key), [str(c) for c in self.configs]]
        return entry_path(hashlib.sha256(json.dumps(parts).encode()).hexdigest(), "autotune")

    def _load_result(self, key: tuple[Any, ...]) -> Config | None:
        from .cache import read_json
        entry = read_json(self._result_path(key))
        if not isinstance(entry, dict):
            return None
        by_text = {str(c): c for c in self.configs}
        best = by_text.get(entry.get("best", ""))
        if best is not None:
            timings = entry.get("timings", {})
            self.configs_timings = {by_text[t]: float(ms) for t, ms in timings.items() if t in by_text}
        return best

    def _save_result(self, key: tuple[Any, ...], best: Config) -> None:
        from .cache import write_json
        timings = {str(c): ms for c, ms in (self.configs_timings or {}).items()}
        write_json(self._result_path(key), {"kernel": self.__name__, "best": str(best), "timings": timings})


QUANTILES = (0.5, 0.2, 0.8)  # what Triton asks a do_bench for; the first (the median) ranks configs


def _takes_quantiles(bench: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(bench).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "quantiles" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _median(result: Any) -> float:
    """A do_bench result (ms, or [median, low, high] with quantiles) as one number."""
    if isinstance(result, (list, tuple)):
        return float(result[0])
    return float(result)


def _failed(config: Config, reason: str, verbose: bool) -> str:
    if verbose:
        print(f"tiles autotuning: config {config} failed: {reason}")
    return reason


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _time_once(call: Callable[[], Any]) -> float:
    """One call's wall-clock time in ms."""
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1e3


def _backend_name(backend: Any) -> str:
    if backend is not None:
        return str(getattr(backend, "name", backend))
    try:
        return registry.default().name
    except TilesError:
        return ""


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    """``str(dtype)``, remembered: NumPy's takes microseconds, and tuning keys are built on every launch."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = str(dtype)
        return name
    except TypeError:  # an unhashable dtype-like attribute
        return str(dtype)


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
             warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
             do_bench: Callable[..., Any] | None = None, cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Decorator: time ``configs`` on first launch per tuning key and launch the fastest.

    ``prune_configs_by``: ``{"early_config_prune": f(configs, named_args, **kwargs),
    "perf_model": f(**named_args, **kwargs, **config) -> estimate, "top_k": int | fraction}``.
    ``reset_to_zero``: arguments zeroed before every trial (and before the real launch);
    ``restore_value``: arguments copied before each trial and restored after it.
    ``pre_hook(nargs, reset_only=False)`` / ``post_hook(nargs, exception)`` replace those defaults.
    ``do_bench(fn, quantiles=...)``: the timer (``warmup``/``rep``: ms budgets of the default one;
    ``use_cuda_graph``: the default is ``testing.do_bench_cudagraph``).
    ``cache_results``: keep the choice in a JSON under ``TILES_CACHE_DIR/autotune``.
    """
    return lambda fn: Autotuner(fn, unwrap(fn).arg_names, configs, key, reset_to_zero, restore_value,
                                pre_hook=pre_hook, post_hook=post_hook, prune_configs_by=prune_configs_by,
                                warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                                cache_results=cache_results)
