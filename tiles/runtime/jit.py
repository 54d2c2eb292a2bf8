"""``@tiles.jit``: specialize, trace once per specialization, compile, launch."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from types import FunctionType, MethodType
from typing import Any

from .. import config, progress
from ..backends import registry
from ..backends.base import Backend, CompiledKernel, Options, PlannedArg
from ..backends.launch_facts import DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS, LAUNCH_OPTIONS, ParamKind
from ..core import passes
from ..core.builder import Builder, current, is_tracing, tb_loc, tracing
from ..core.dtypes import DType, PointerType
from ..core.errors import ArgumentOverflowError, CompilationError, LaunchError, TilesError
from ..core.frontend import rewrite
from ..core.ir import Kernel, Loc, Param, TileType, Value
from ..core.printer import format_kernel
from ..language import control
from ..language.constexpr import as_constexpr
from . import checked_launch, descriptor_args, expanded_args, global_guards, hot_path, kernel_source
from .binder import MISSING, can_bind, make_launch, tensor_type
from .launch_options import JIT_HINTS, split_hints
from .specialize import ArgSpec, MockArray, launch_key, mock_dtype_argument
from .tensor_wrapper import TensorWrapper  # noqa: F401  (triton.runtime.jit.TensorWrapper)
from .validate import MAX_GRID_SIZE, check_num_warps, check_positive_int, check_writable, normalize_grid, quick_grid

Grid = tuple[int, ...] | Callable[[dict[str, Any]], tuple[int, ...]]
LAUNCH_KEYWORDS = frozenset({"grid", *LAUNCH_OPTIONS})  # run's keywords besides the kernel's parameters


def _is_constexpr_annotation(ann: Any) -> bool:
    from ..language.core import constexpr
    if ann is constexpr:
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "constexpr"


class KernelInterface:
    """What can be launched as ``kernel[grid](...)``: @jit, @autotune and @heuristics kernels."""

    def run(self, *args: Any, grid: Grid, warmup: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    def __getitem__(self, grid: Grid) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid)


class FastLaunch:
    """A launch plan found by the binder's key: ``target`` is None when an argument on a device
    fixes it, else the ``backend.target_key()`` it was built for (checked on each launch)."""

    __slots__ = ("compiled", "launcher", "backend", "target", "direct", "failed", "hot", "hot_form")

    def __init__(self, compiled: CompiledKernel, launcher: Callable[..., None], backend: Backend,
                 target: Any) -> None:
        self.compiled, self.launcher, self.backend, self.target = compiled, launcher, backend, target
        # the launcher's direct form, where it has one (runtime/binder.py: ``direct(stream, *grid,
        # *arguments with tensors as their addresses) -> status``) and what reports a failed status
        self.direct: Callable[..., int] | None = getattr(launcher, "direct", None)
        self.failed: Callable[[int, tuple[int, int, int]], None] | None = getattr(launcher, "failed", None)
        if self.failed is None:
            self.direct = None
        # its native hot launch, built by runtime/hot_path.install (False: none can be built)
        self.hot: Any = None
        self.hot_form: Any = None


class LaunchPlans(dict[tuple[Any, ...], Any]):
    """The jit's launch plans by key; clearing them also drops the hot launch ``kernel[grid]``
    binds (runtime/hot_path.py), which serves one of them."""

    __slots__ = ("on_clear",)

    def __init__(self, on_clear: Callable[[], None]) -> None:
        super().__init__()
        self.on_clear = on_clear

    def clear(self) -> None:
        hot_path.retire([e for e in self.values() if isinstance(e, FastLaunch)])
        super().clear()
        self.on_clear()


def _device_index(value: Any) -> int:
    """A torch tensor's device index (-1 on the CPU, and for anything else)."""
    get_device = getattr(value, "get_device", None)
    try:
        return int(get_device()) if callable(get_device) else -1
    except Exception:  # not torch's get_device
        return -1


class CompileCache(dict[tuple[Any, ...], CompiledKernel]):
    """``JITFunction.cache``: the compiled kernel of each key launched.  On a backend whose code does
    not depend on divisibility (``Backend.divisibility_free``: the interpreter), keys that differ
    only in it share one trace, kept in ``shared`` under the key without divisibility facts when
    no launch had that key; clearing the cache drops those too."""

    __slots__ = ("shared",)

    def __init__(self) -> None:
        super().__init__()
        self.shared: dict[tuple[Any, ...], CompiledKernel] = {}

    def clear(self) -> None:
        super().clear()
        self.shared.clear()

    def find(self, key: tuple[Any, ...]) -> CompiledKernel | None:
        found = self.get(key)
        return self.shared.get(key) if found is None else found


MockTensor = MockArray  # Triton's name: kernel.warmup(MockTensor(torch.float32), ...)


CompileHints = tuple[bool | None, int | None]  # Triton's launch hints that change the code: enable_fp_fusion, maxnreg
NO_COMPILE_HINTS: CompileHints = (None, None)


_LIVE: weakref.WeakSet[JITFunction] = weakref.WeakSet()


def forget_compiled_kernels() -> None:
    """Drop every live kernel's traces and launch plans, so the next launches trace again (the
    language's rules changed: the Triton compatibility mode was installed or removed)."""
    for jit_fn in list(_LIVE):
        jit_fn._launches.clear()
        jit_fn.cache.clear()


class JITFunction(KernelInterface):
    """A kernel (or a device helper called from kernels)."""

    tiles_jit_function = True  # what specialize.py recognizes a @jit argument by (no import cycle)

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Sequence[str | int] = (),
                 debug: bool | None = None) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexprs = {n for n, p in self.signature.parameters.items()
                           if _is_constexpr_annotation(p.annotation)}
        names = self.arg_names
        self.do_not_specialize = {names[d] if isinstance(d, int) else d for d in do_not_specialize}
        self._hot_lock = threading.RLock()
        self._launches = LaunchPlans(self._drop_hot)
        self.debug = debug
        self._rewritten: Callable[..., Any] | None = None
        self.source = ""
        # the text to rewrite when it is not the function's file: recovered from exec(), or set
        # through ``src`` (runtime/kernel_source.py)
        self._source_override: kernel_source.KernelSource | None = kernel_source.unfound(fn)
        self.cache = CompileCache()
        _LIVE.add(self)
        self.defaults = {n: p.default for n, p in self.signature.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self._param_kinds = tuple(ParamKind.CONSTEXPR if n in self.constexprs else ParamKind.NOT_SPECIALIZED
                                  if n in self.do_not_specialize else ParamKind.SPECIALIZED for n in self.arg_names)
        self.loc = Loc(fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__name__)
        self._param_names = frozenset(self.arg_names)
        # First launches of one key from many threads compile once: one lock per key, taken only
        # on a cache miss.  A result is cached only after it was built without an error.
        self._locks: dict[Any, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        # The steady-state launch: ``kernel[grid]`` is a function with the kernel's signature that
        # computes the key facts (runtime/binder.py); ``_launches`` maps (backend, options, debug,
        # *facts) to a FastLaunch.
        # ``_fast_launch`` is what ``kernel[grid]`` binds: the launch function, or the first of the
        # hot launches it installed (``_hot_chain``, runtime/hot_path.py), which end in it.
        # The module globals the first compile read (runtime/global_guards.py): filled once, then
        # checked on every launch while not empty (the launch function holds this list).
        self._guards: list[global_guards.Guard] = []
        self._guards_recorded = False
        self._binder_tensor = tensor_type()
        self._launch_function = self._make_fast_launch() \
            if can_bind(self.signature) and not self._param_names & LAUNCH_KEYWORDS else None
        self._fast_launch = self._launch_function
        self._hot_chain: hot_path.Chain = []


    @property
    def debug(self) -> bool | None:
        """``@jit(debug=)``; changing it drops the cached launch plans, which do not key on it."""
        return self._debug

    @debug.setter
    def debug(self, value: bool | None) -> None:
        self._debug = value
        self._launches.clear()  # in place: the generated launch function holds this dict

    def _make_fast_launch(self) -> Callable[..., Any]:
        hooks = {"launches": self._launches, "registry": registry, "quick_grid": quick_grid,
                 "max_grid": MAX_GRID_SIZE, "launch": self._launch, "slow": self._slow,
                 "install": self._install_hot, "guards": self._guards, "check_globals": self._check_globals}
        return make_launch(self.__name__, self.signature, self._param_kinds, hooks)

    def _install_hot(self, entry: FastLaunch, key: tuple[Any, ...], backend: Any) -> None:
        """Let ``kernel[grid]`` bind ``entry``'s hot launch (runtime/hot_path.py), where it has one."""
        if self._launch_function is None:
            return
        with self._hot_lock:  # one chain update at a time: every link stays to a live hot launch
            self._install_hot_locked(entry, key, backend)

    def _install_hot_locked(self, entry: FastLaunch, key: tuple[Any, ...], backend: Any) -> None:
        assert self._launch_function is not None
        try:
            hot = hot_path.install(entry, key, backend, self._param_kinds, self._binder_tensor, self.signature,
                                   self._launch_function, self._guards)
        except Exception:  # the launch function keeps serving; a launch never fails for want of a hot launch
            entry.hot = hot_path.NOT_BUILT
            return
        if hot is not None:
            self._hot_chain = hot_path.chained(self._hot_chain, entry, hot, self._launch_function)
            self._fast_launch = hot

    def _drop_hot(self) -> None:  # (the plans' hot launches were retired: nothing links to them)
        with self._hot_lock:
            self._hot_chain = []
            self._fast_launch = getattr(self, "_launch_function", None)

    def __getitem__(self, grid: Grid) -> Callable[..., Any]:
        fast = self._fast_launch
        if fast is None or grid is None:  # (a method cannot be bound to None; run says what a grid is)
            return functools.partial(self.run, grid=grid)
        return MethodType(fast, grid)

    def _lock_for(self, key: Any) -> threading.RLock:
        with self._locks_guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.RLock()
            return lock

    # -- tracing -------------------------------------------------------------
    @property
    def rewritten(self) -> Callable[..., Any]:
        if self._rewritten is None:
            with self._lock_for("rewrite"):
                if self._rewritten is None:
                    o = self._source_override
                    text = None if o is None else (o.text, o.first_line, o.filename)
                    rewritten, self.source = rewrite(self.fn, control, text)
                    self._rewritten = rewritten
        return self._rewritten

    @property
    def src(self) -> str:
        """The function's source from its ``def`` line on (Triton's ``JITFunction.src``)."""
        if self._source_override is not None:
            return self._source_override.text
        return kernel_source.def_text(inspect.getsource(self.fn))

    @src.setter
    def src(self, text: str) -> None:
        self._unsafe_update_src(text)

    def _unsafe_update_src(self, text: str) -> None:
        """Compile ``text`` instead of the function's source from the next launch on (Triton's
        tests edit kernels so).  As in Triton, kernels that call this one keep what they traced."""
        self._source_override = kernel_source.edited(self.fn, text, kernel_source.def_line(self.fn))
        self._rewritten = None
        self.cache.clear()
        self._launches.clear()
        self._guards.clear()  # (in place: the launch function holds it) the new text may read other globals
        self._guards_recorded = False

    @property
    def cache_key(self) -> str:
        """A hash of this kernel's source and of every @jit function it calls (Triton's name)."""
        from .cache import source_fingerprint
        return source_fingerprint(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not is_tracing():
            raise LaunchError(f"{self.loc}: {self.__name__} is a @tiles.jit function: launch it with "
                              f"{self.__name__}[grid](...) instead of calling it from host code")
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for name, value in bound.arguments.items():  # as Triton: tl.constexpr objects, dtypes too
            if name in self.constexprs or isinstance(value, (DType, PointerType)):
                bound.arguments[name] = as_constexpr(value)
        run = getattr(current(), "function_for", None)  # stepping mode: interp/eager.py
        return (run(self) if run else self.rewritten)(*bound.args, **bound.kwargs)

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"{self.loc}: {self.__name__}({', '.join(self.arg_names)}): {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def specialize(self, bound: dict[str, Any]) -> list[ArgSpec]:
        specs = []
        for name, value in bound.items():
            try:
                specs += expanded_args.specs_of(name, value, name in self.constexprs,
                                                name not in self.do_not_specialize)
            except OverflowError as e:
                raise ArgumentOverflowError(f"{self.loc}: {self.__name__}: {e}") from None
            except TypeError as e:
                raise LaunchError(f"{self.loc}: {self.__name__}: {e}") from None
        return specs

    def trace(self, specs: Sequence[ArgSpec]) -> Kernel:
        builder = Builder()
        params: list[Param] = []
        leaves: list[Any] = []
        from ..language.tensor import tensor
        for spec in specs:
            if spec.constexpr:
                leaves.append(as_constexpr(spec.value))
                continue
            assert spec.type is not None
            v = Value(TileType(spec.type), spec.name)
            params.append(Param(spec.name, v, spec.divisibility))
            leaves.append(tensor(v))
        try:
            with tracing(builder):
                self.rewritten(*expanded_args.regroup(specs, leaves))
        except CompilationError:
            raise
        except TilesError:
            raise
        except Exception as e:  # an error inside user code: point at the kernel line
            loc = tb_loc(sys.exc_info()[2])
            raise CompilationError(f"{type(e).__name__}: {e}", loc) from e
        constants = {s.name: s.value for s in specs if s.constexpr}
        kernel = Kernel(self.__name__, params, builder.blocks[0], self.loc, constants)
        return passes.run_pipeline(kernel)

    def ir(self, *args: Any, **kwargs: Any) -> str:
        """The tile IR this kernel traces to for these arguments, as text."""
        kwargs = {k: v for k, v in kwargs.items() if k not in LAUNCH_KEYWORDS}
        kwargs, _ = split_hints(kwargs, self.arg_names, self.loc, self.__name__)
        specs = self.specialize(self._bind(args, kwargs))
        return format_kernel(self.trace(specs))

    # -- compile and launch -------------------------------------------------
    def _check_globals(self) -> None:
        """Raise if a module global the compiled code baked in was rebound (as Triton does); one
        rebound to an equal value is taken as the new object, and the native hot launches, which
        compare objects, are dropped to be rebuilt."""
        if global_guards.check(self._guards, self.loc, self.__name__):
            self._launches.clear()

    def _record_globals(self) -> None:
        """At the first compile: the globals every later launch checks (runtime/global_guards.py)."""
        with self._lock_for("globals"):
            if not self._guards_recorded:
                self._guards[:] = global_guards.record(self)  # in place: the launch function holds it
                self._guards_recorded = True

    def compile_for(self, specs: Sequence[ArgSpec], backend: Backend, options: Options) -> CompiledKernel:
        if self._guards:
            self._check_globals()
        key = (backend.name, backend.target_key(), options, *(s.key() for s in specs))
        compiled = self.cache.get(key)
        if compiled is None:
            with self._lock_for(("compile", key)):
                compiled = self.cache.get(key)
                if compiled is None:
                    if not self._guards_recorded:
                        self._record_globals()
                    with progress.compiling(self.__name__, backend.name):
                        compiled = self._compile(specs, backend, options)
                    self.cache[key] = compiled
        return compiled

    def _compile(self, specs: Sequence[ArgSpec], backend: Backend, options: Options) -> CompiledKernel:
        compiled = self._build(specs, backend, options)
        for stage in config.dump_stages(compiled.asm):
            if stage in compiled.asm:
                print(f"// ---- {self.__name__}: {stage}\n{compiled.asm[stage]}", file=sys.stderr)
        return compiled

    def _respecialize(self, specs: Sequence[ArgSpec], backend: Backend, options: Options) -> CompiledKernel:
        """On a ``divisibility_free`` backend: the kernel built for ``specs`` without divisibility
        facts (traced once for all of them), its parameters given ``specs``' facts."""
        generic = [dataclasses.replace(s, divisibility=1) if s.divisibility != 1 else s for s in specs]
        key = (backend.name, backend.target_key(), options, *(s.key() for s in generic))
        base = self.cache.find(key)
        if base is None:
            with self._lock_for(("compile", key)):
                base = self.cache.find(key)
                if base is None:
                    base = self.cache.shared[key] = self._build(generic, backend, options)
        facts = {s.name: s.divisibility for s in specs}
        ir = base.ir
        params = [Param(p.name, p.value, facts.get(p.name, p.divisibility)) for p in ir.params]
        return backend.respecialized(base, Kernel(ir.name, params, ir.body, ir.loc, ir.constants, ir.stand_ins))

    def _build(self, specs: Sequence[ArgSpec], backend: Backend, options: Options) -> CompiledKernel:
        from .cache import compile_cached
        if backend.divisibility_free:
            if any(s.divisibility != 1 for s in specs):
                return self._respecialize(specs, backend, options)
            shared = self.cache.shared.get((backend.name, backend.target_key(), options, *(s.key() for s in specs)))
            if shared is not None:
                return shared

        def traced() -> Kernel:  # only on a disk-cache miss
            own = getattr(backend, "trace", None)  # stepping mode traces its own way (backends/stepping.py)
            kernel = own(self, specs) if own else self.trace(specs)
            if not options.debug:
                kernel = _without_device_asserts(kernel)
            return checked_launch.instrument_for(kernel, backend, options)
        compiled = compile_cached(self, specs, backend, options, traced)
        if getattr(backend, "wants_function", False):  # the stepping interpreter runs the Python
            compiled.extra.update(jit_function=self, specs=tuple(specs), regroup=expanded_args.regroup)
        if "ir" not in compiled.asm:
            compiled.asm["ir"] = format_kernel(compiled.ir)
        return compiled

    def run(self, *args: Any, grid: Grid, warmup: bool = False, num_warps: int | None = None,
            num_stages: int | None = None, debug: bool | None = None, stream: Any = None,
            backend: str | Backend | None = None, **kwargs: Any) -> CompiledKernel:
        """Launch over ``grid`` (Triton's ``run``); ``warmup=True`` compiles without launching.

        ``stream`` is handed to the backend's launcher as ``launcher(grid, values, stream=...)``;
        other Triton launch options are accepted hints (``launch_options.HINTS``).  A kernel with
        a parameter named like an option (``num_stages: tl.constexpr``, as Triton's softmax
        tutorial has) receives the option's value too, as in Triton.
        """
        if self._fast_launch is not None:
            return self._fast_launch(grid, *args, warmup=warmup, num_warps=num_warps, num_stages=num_stages,
                                     debug=debug, stream=stream, backend=backend, **kwargs)
        return self._run(args, kwargs, grid, warmup, num_warps, num_stages, debug, stream, backend, None)

    def _slow(self, grid: Grid, values: tuple[Any, ...], extra: tuple[Any, ...], hints: dict[str, Any],
              warmup: bool, num_warps: int | None, num_stages: int | None, debug: bool | None, stream: Any,
              backend: str | Backend | None, fast_key: tuple[Any, ...] | None) -> CompiledKernel:
        """What ``kernel[grid](...)`` does without a hit in ``_launches`` (``runtime/binder.py``)."""
        if any(v is MISSING for v in values):  # the general binding says which one is missing
            args: Sequence[Any] = ()
            kwargs = {n: v for n, v in zip(self.arg_names, values) if v is not MISSING}
            kwargs.update(hints)
        else:
            args, kwargs = (*values, *extra), hints
        return self._run(args, kwargs, grid, warmup, num_warps, num_stages, debug, stream, backend, fast_key)

    def _options_as_params(self, args: Sequence[Any], kwargs: dict[str, Any], num_warps: int | None,
                           num_stages: int | None) -> tuple[int, int]:
        """``num_warps``/``num_stages`` given to a kernel with parameters of those names also bind
        them (into ``kwargs``, unless passed positionally); the options with their defaults."""
        for name, option in (("num_warps", num_warps), ("num_stages", num_stages)):
            if (option is not None and name in self._param_names and name not in kwargs
                    and self.arg_names.index(name) >= len(args)):
                kwargs[name] = option
        return (DEFAULT_NUM_WARPS if num_warps is None else num_warps,
                DEFAULT_NUM_STAGES if num_stages is None else num_stages)

    def _without_hints(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], CompileHints]:
        """``kwargs`` without Triton's hint options (checked), and those of them that change the code."""
        if not kwargs or kwargs.keys() <= self._param_names:
            return kwargs, NO_COMPILE_HINTS
        kwargs, hints = split_hints(kwargs, self.arg_names, self.loc, self.__name__)
        return kwargs, (hints.get("enable_fp_fusion"), hints.get("maxnreg"))

    def _run(self, args: Sequence[Any], kwargs: dict[str, Any], grid: Grid, warmup: bool,
             num_warps: int | None, num_stages: int | None, debug: bool | None, stream: Any,
             backend: str | Backend | None, fast_key: tuple[Any, ...] | None) -> CompiledKernel:
        """``run`` without a binder hit: bind in general, find or build the launch plan."""
        if self._guards:
            self._check_globals()
        num_warps, num_stages = self._options_as_params(args, kwargs, num_warps, num_stages)
        kwargs, compile_hints = self._without_hints(kwargs)
        values = self._values(args, kwargs)
        be = backend if isinstance(backend, Backend) else _resolve_backend(backend)
        target = be.target_key()
        key = (be, target, num_warps, num_stages, type(num_warps), type(num_stages), debug, compile_hints,
               launch_key(values, self._param_kinds))
        entry = self._launches.get(key)
        if entry is None:
            with self._lock_for(("launch", key)):
                entry = self._launches.get(key)
                if entry is None:
                    entry = self._prepare_launch(values, be, num_warps, num_stages, debug, compile_hints)
                    self._launches[key] = entry
        compiled, launcher = entry
        if fast_key is not None:
            self._remember(fast_key, compiled, launcher, be, target, values)
        if warmup:
            return compiled
        return self._launch(compiled, launcher, grid, values, num_warps, num_stages, stream)

    def _remember(self, fast_key: tuple[Any, ...], compiled: CompiledKernel, launcher: Callable[..., None],
                  be: Backend, target: Any, values: Sequence[Any]) -> None:
        """Serve later launches with ``fast_key`` from the binder's path.  An argument on a device
        fixes the target; otherwise each launch checks the current target (device) first."""
        if tensor_type() is not self._binder_tensor:  # torch was imported since: rebuild the facts' code
            self._binder_tensor = tensor_type()
            self._launch_function = self._fast_launch = self._make_fast_launch()
            self._hot_chain = hot_path.unchained(self._hot_chain)
            return
        on_device = getattr(launcher, "device", None) is not None or \
            any(_device_index(v) >= 0 for v in expanded_args.flatten(values, self._param_kinds))
        self._launches[fast_key] = FastLaunch(compiled, launcher, be, None if on_device else target)

    def _launch(self, compiled: CompiledKernel, launcher: Callable[..., None], grid: Grid,
                values: Sequence[Any], num_warps: int | None, num_stages: int | None,
                stream: Any) -> CompiledKernel:
        if callable(grid):
            meta = dict(zip(self.arg_names, values))
            meta["num_warps"] = DEFAULT_NUM_WARPS if num_warps is None else num_warps
            meta["num_stages"] = DEFAULT_NUM_STAGES if num_stages is None else num_stages
            grid = grid(meta)
        launch_grid = quick_grid(grid)
        if launch_grid is None:
            launch_grid = normalize_grid(grid, self.loc, self.__name__)
            if not (launch_grid[0] and launch_grid[1] and launch_grid[2]):
                return compiled
        if stream is None:
            launcher(launch_grid, values)
        else:
            launcher(launch_grid, values, stream=stream)
        return compiled

    def _values(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """Argument values in parameter order (the fast form of ``_bind``)."""
        names = self.arg_names
        if len(args) > len(names):
            return list(self._bind(args, kwargs).values())
        values = list(args)
        used = 0
        for name in names[len(args):]:
            if name in kwargs:
                values.append(kwargs[name])
                used += 1
            elif name in self.defaults:
                values.append(self.defaults[name])
            else:
                return list(self._bind(args, kwargs).values())
        if used != len(kwargs):
            return list(self._bind(args, kwargs).values())
        return values

    def _prepare_launch(self, values: list[Any], backend: Backend, num_warps: int, num_stages: int,
                        debug: bool | None, compile_hints: CompileHints = NO_COMPILE_HINTS
                        ) -> tuple[CompiledKernel, Callable[..., None]]:
        named = dict(zip(self.arg_names, values))
        specs = self.specialize(named)
        compiled = self.compile_for(specs, backend, self._options(backend, num_warps, num_stages, debug, compile_hints))
        stores = _first_writes(compiled.ir)
        expand = expanded_args.has_expansion(values, self._param_kinds)
        if expand:  # the launcher takes descriptors' and tuples' expanded parameters (runtime/expanded_args.py)
            values = expanded_args.flatten(values, self._param_kinds)
            named = {s.name: v for s, v in zip(specs, values)}
        check_writable(named, stores, self.loc, self.__name__)
        plan = [PlannedArg(i, s.name, isinstance(s.type, PointerType), s.name in stores)
                for i, s in enumerate(specs) if not s.constexpr]
        keyed = getattr(backend, "make_keyed_launcher", None)
        if keyed is not None and checked_launch.plan_of(compiled) is None:
            # the launch key fixes every argument's type, dtype and device: the backend may rely on it
            launcher = keyed(compiled, plan, values)
        else:
            launcher = checked_launch.make_launcher(backend, compiled, plan,
                                                    lambda inner: _accepting_stream(inner, backend))
        launcher = _accepting_stream(launcher, backend)
        return compiled, expanded_args.expanding(launcher, self._param_kinds) if expand else launcher

    def warmup(self, *args: Any, grid: Grid = (1,), num_warps: int | None = None, num_stages: int | None = None,
               debug: bool | None = None, stream: Any = None, backend: str | Backend | None = None,
               signature: dict[str | int, str] | None = None,
               constexprs: dict[str | int, Any] | None = None, **kwargs: Any) -> CompiledKernel:
        """Compile for these arguments without launching.  As in Triton, a dtype (``torch.float32``,
        ``np.float32``, ``np.dtype("float16")``) in place of an array stands for an array of it;
        ``signature``/``constexprs`` compile from type strings instead (see ``compile``)."""
        num_warps, num_stages = self._options_as_params(args, kwargs, num_warps, num_stages)
        kwargs, compile_hints = self._without_hints(kwargs)
        if signature is not None:
            merged: dict[str | int, Any] = {**constexprs} if constexprs else {}
            merged.update(kwargs)
            return self.compile(signature, merged, backend=backend,
                                num_warps=num_warps, num_stages=num_stages)
        bound = self._bind([mock_dtype_argument(a) for a in args],
                           {k: mock_dtype_argument(v) if k not in self.constexprs else v
                            for k, v in kwargs.items()})
        be = _resolve_backend(backend)
        compiled = self.compile_for(self.specialize(bound), be,
                                    self._options(be, num_warps, num_stages, debug, compile_hints))
        compiled.loaded["launch"] = functools.partial(self.run, backend=be)  # compiled[grid](...)
        return compiled

    def compile(self, signature: dict[str | int, str], constexprs: dict[str | int, Any] | None = None,
                backend: str | Backend | None = None, num_warps: int = DEFAULT_NUM_WARPS,
                num_stages: int = DEFAULT_NUM_STAGES) -> CompiledKernel:
        """Compile from type strings, without arguments, a launch or (where the toolchain allows)
        a device: ``compile(signature={"x": "*fp32", "n": "i32"}, constexprs={"BLOCK": 1024})``.

        Types: ``*fp32``, ``*fp16``, ``*i8``, ``i32``, ``i64``, ``fp32``... (any tiles dtype
        name); ``:16`` after one promises that the address or value is a multiple of 16;
        ``tensordesc<fp16[64, 64]>`` a host ``TensorDescriptor`` of that block shape.
        """
        specs = self.specs_from_signature(signature, constexprs or {})
        be = _resolve_backend(backend)
        return self.compile_for(specs, be, self._options(be, num_warps, num_stages))

    def specs_from_signature(self, signature: dict[str | int, str],
                             constexprs: dict[str | int, Any]) -> list[ArgSpec]:
        def by_name(table: dict[str | int, Any]) -> dict[str, Any]:
            return {self.arg_names[k] if isinstance(k, int) else k: v for k, v in table.items()}
        types, values = by_name(signature), by_name(constexprs)
        unknown = sorted((set(types) | set(values)) - set(self.arg_names))
        if unknown:
            raise LaunchError(f"{self.__name__} has no parameter {', '.join(unknown)}; "
                              f"its parameters: {', '.join(self.arg_names)}")
        specs = []
        for name, param in self.signature.parameters.items():
            if name in values or (name not in types and name in self.constexprs
                                  and param.default is not inspect.Parameter.empty):
                specs.append(ArgSpec(name, True, values.get(name, param.default)))
            elif name in types:
                try:
                    expanded = descriptor_args.specs_from_type_string(name, types[name])
                except ValueError as e:
                    raise LaunchError(f"{self.loc}: {self.__name__}: {e}") from None
                specs += expanded if expanded is not None else [_parse_type_string(name, types[name])]
            elif param.default is not inspect.Parameter.empty:
                specs.append(self.specialize({name: param.default})[0])
            else:
                kind = "constexprs" if name in self.constexprs else "signature"
                raise LaunchError(f"{self.__name__}: give a type for {name!r} in {kind}")
        return specs

    def _options(self, backend: Backend, num_warps: int, num_stages: int,
                 debug: bool | None = None, compile_hints: CompileHints = NO_COMPILE_HINTS) -> Options:
        if debug is None:
            debug = config.debug() if self.debug is None else bool(self.debug)
        num_warps = check_num_warps(num_warps, backend.target(), self.loc, self.__name__)
        num_stages = check_positive_int("num_stages", num_stages, self.loc, self.__name__, minimum=0)
        fp_fusion, maxnreg = compile_hints
        fusion = backend.fp_fusion_default if fp_fusion is None else bool(fp_fusion)
        return Options(num_warps=num_warps, num_stages=num_stages, debug=bool(debug), fp_fusion=fusion,
                       maxnreg=maxnreg, codegen=backend.code_choices())


def _resolve_backend(backend: str | Backend | None) -> Backend:
    if isinstance(backend, Backend):
        return backend
    return registry.get(backend) if backend else registry.default()


def _parse_type_string(name: str, text: str) -> ArgSpec:
    """``"*fp32:16"`` -> pointer to float32 whose address is a multiple of 16."""
    from ..core.dtypes import BY_NAME
    type_text, _, hint = text.strip().partition(":")
    pointer = type_text.startswith("*")
    dtype = BY_NAME.get(type_text.lstrip("*"))
    if dtype is None or (hint and not hint.isdigit()):
        raise LaunchError(f"parameter {name!r}: cannot read type {text!r}; expected e.g. '*fp32', "
                          f"'i32', 'fp16' or '*fp32:16' (known: {', '.join(sorted(BY_NAME))})")
    return ArgSpec(name, False, type=PointerType(dtype) if pointer else dtype,
                   divisibility=16 if hint and int(hint) % 16 == 0 else 1)


def _without_device_asserts(kernel: Kernel) -> Kernel:
    """Triton drops ``tl.device_assert`` unless the kernel is compiled with ``debug``."""
    from ..core.ops import Op

    def strip(block: Any) -> None:
        block.instrs = [i for i in block.instrs if i.op is not Op.DEVICE_ASSERT]
        for instr in block.instrs:
            for region in instr.regions:
                strip(region)
    strip(kernel.body)
    return kernel


@functools.lru_cache(maxsize=256)
def _code_takes_stream(code: Any) -> bool:
    return "stream" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _accepting_stream(launcher: Callable[..., None], backend: Backend) -> Callable[..., None]:
    """``launcher`` itself when it takes ``stream=``; else one that says so when given a stream."""
    if type(launcher) is FunctionType and not launcher.__dict__:  # a plain function: its code says (cheaper)
        if _code_takes_stream(launcher.__code__):
            return launcher
    else:
        try:
            if "stream" in inspect.signature(launcher).parameters:
                return launcher
        except (TypeError, ValueError):
            return launcher

    def without_streams(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
        if stream is not None:
            raise LaunchError(f"the {backend.name} backend's launcher does not take stream= yet; "
                              "launch without it (the backend's current stream is used)")
        launcher(grid, values)
    return without_streams


def _first_writes(kernel: Kernel) -> dict[str, Loc]:
    """Pointer params whose memory some store or atomic may write, with that write's line."""
    from .analysis import first_writes
    return first_writes(kernel)


def jit(fn: Callable[..., Any] | None = None, *, do_not_specialize: Sequence[str | int] = (),
        debug: bool | None = None, **hints: Any) -> Any:
    """Decorator: make ``fn`` a tiles kernel (``kernel[grid](...)``) or device helper.  Triton's other
    keywords are accepted without effect (``launch_options.JIT_HINTS``); any other is a TypeError."""
    unknown = sorted(set(hints) - JIT_HINTS)
    if unknown:
        raise TypeError(f"jit() got unexpected keyword argument(s) {', '.join(unknown)}; it takes "
                        f"do_not_specialize, debug and Triton's {', '.join(sorted(JIT_HINTS))} (no effect)")

    def wrap(f: Callable[..., Any]) -> JITFunction:
        return JITFunction(f, do_not_specialize, debug)
    return wrap(fn) if fn is not None else wrap
