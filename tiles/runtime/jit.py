"""``@tiles.jit``: specialize, trace once per specialization, compile, launch."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import config
from ..backends import registry
from ..backends.base import Backend, CompiledKernel, Options
from ..core import passes
from ..core.builder import Builder, is_tracing, tb_loc, tracing
from ..core.dtypes import PointerType
from ..core.errors import CompilationError, LaunchError, TilesError
from ..core.frontend import rewrite
from ..core.ir import Kernel, Loc, Param, TileType, Value
from ..core.printer import format_kernel
from . import checked_launch
from .specialize import ArgSpec, classify, launch_key

Grid = tuple[int, ...] | Callable[[dict[str, Any]], tuple[int, ...]]


def _is_constexpr_annotation(ann: Any) -> bool:
    from ..language.core import constexpr
    if ann is constexpr:
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "constexpr"


class JITFunction:
    """A kernel (or a device helper called from kernels)."""

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
        self.debug = debug
        self._rewritten: Callable[..., Any] | None = None
        self.source = ""
        self.cache: dict[tuple[Any, ...], CompiledKernel] = {}
        self._launches: dict[tuple[Any, ...], Any] = {}
        self._defaults = {n: p.default for n, p in self.signature.parameters.items()
                          if p.default is not inspect.Parameter.empty}
        self._param_kinds = tuple("c" if n in self.constexprs else
                                  ("n" if n in self.do_not_specialize else "s") for n in self.arg_names)
        self.loc = Loc(fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__name__)

    # -- tracing -------------------------------------------------------------
    @property
    def rewritten(self) -> Callable[..., Any]:
        if self._rewritten is None:
            self._rewritten, self.source = rewrite(self.fn)
        return self._rewritten

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not is_tracing():
            raise LaunchError(f"{self.loc}: {self.__name__} is a @tiles.jit function: launch it with "
                              f"{self.__name__}[grid](...) instead of calling it from host code")
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return self.rewritten(*bound.args, **bound.kwargs)

    def __getitem__(self, grid: Grid) -> Callable[..., CompiledKernel]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

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
                specs.append(classify(name, value, name in self.constexprs,
                                      name not in self.do_not_specialize))
            except (TypeError, OverflowError) as e:
                raise LaunchError(f"{self.loc}: {self.__name__}: {e}") from None
        return specs

    def trace(self, specs: Sequence[ArgSpec]) -> Kernel:
        builder = Builder()
        params: list[Param] = []
        call_args: list[Any] = []
        from ..language.tensor import tensor
        for spec in specs:
            if spec.constexpr:
                call_args.append(spec.value)
                continue
            assert spec.type is not None
            v = Value(TileType(spec.type), spec.name)
            params.append(Param(spec.name, v, spec.divisibility))
            call_args.append(tensor(v))
        try:
            with tracing(builder):
                self.rewritten(*call_args)
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
        kwargs = {k: v for k, v in kwargs.items() if k not in ("num_warps", "num_stages")}
        specs = self.specialize(self._bind(args, kwargs))
        return format_kernel(self.trace(specs))

    # -- compile and launch -------------------------------------------------
    def compile_for(self, specs: Sequence[ArgSpec], backend: Backend, options: Options) -> CompiledKernel:
        key = (backend.name, options, *(s.key() for s in specs))
        compiled = self.cache.get(key)
        if compiled is None:
            from .cache import compile_cached
            kernel = self.trace(specs)
            if not options.debug:
                kernel = _without_device_asserts(kernel)
            kernel = checked_launch.instrument_for(kernel, backend, options)
            compiled = compile_cached(self, specs, backend, options, kernel)
            compiled.asm.setdefault("ir", format_kernel(kernel))
            for stage in config.dump_stages():
                if stage in compiled.asm:
                    print(f"// ---- {self.__name__}: {stage}\n{compiled.asm[stage]}", file=sys.stderr)
            self.cache[key] = compiled
        return compiled

    def run(self, *args: Any, grid: Grid, num_warps: int = 4, num_stages: int = 3,
            backend: str | Backend | None = None, **kwargs: Any) -> CompiledKernel:
        values = self._values(args, kwargs)
        be = backend if isinstance(backend, Backend) else _resolve_backend(backend)
        key = (be, num_warps, num_stages, launch_key(values, self._param_kinds))
        entry = self._launches.get(key)
        if entry is None:
            entry = self._prepare_launch(values, be, num_warps, num_stages)
            self._launches[key] = entry
        compiled, launcher = entry
        if callable(grid):
            grid = grid({**dict(zip(self.arg_names, values)), "num_warps": num_warps,
                         "num_stages": num_stages})
        if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and grid[0] > 0:
            launcher((grid[0], 1, 1), values)
            return compiled
        launch_grid = _normalize_grid(grid, self.__name__)
        if launch_grid[0] and launch_grid[1] and launch_grid[2]:
            launcher(launch_grid, values)
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
            elif name in self._defaults:
                values.append(self._defaults[name])
            else:
                return list(self._bind(args, kwargs).values())
        if used != len(kwargs):
            return list(self._bind(args, kwargs).values())
        return values

    def _prepare_launch(self, values: list[Any], backend: Backend, num_warps: int,
                        num_stages: int) -> tuple[CompiledKernel, Callable[..., None]]:
        specs = self.specialize(dict(zip(self.arg_names, values)))
        compiled = self.compile_for(specs, backend, self._options(num_warps, num_stages))
        written = _written_params(compiled.ir)
        plan = [(i, s.name, isinstance(s.type, PointerType), s.name in written)
                for i, s in enumerate(specs) if not s.constexpr]
        return compiled, checked_launch.make_launcher(backend, compiled, plan)

    def warmup(self, *args: Any, grid: Grid = (1,), num_warps: int = 4, num_stages: int = 3,
               backend: str | Backend | None = None, signature: dict[str | int, str] | None = None,
               constexprs: dict[str | int, Any] | None = None, **kwargs: Any) -> CompiledKernel:
        """Compile for these arguments (or for ``signature``/``constexprs``) without launching."""
        if signature is not None:
            merged: dict[str | int, Any] = {**constexprs} if constexprs else {}
            merged.update(kwargs)
            return self.compile(signature, merged, backend=backend,
                                num_warps=num_warps, num_stages=num_stages)
        bound = self._bind(args, kwargs)
        return self.compile_for(self.specialize(bound), _resolve_backend(backend),
                                self._options(num_warps, num_stages))

    def compile(self, signature: dict[str | int, str], constexprs: dict[str | int, Any] | None = None,
                backend: str | Backend | None = None, num_warps: int = 4,
                num_stages: int = 3) -> CompiledKernel:
        """Compile from type strings, without arguments, a launch or (where the toolchain allows)
        a device: ``compile(signature={"x": "*fp32", "n": "i32"}, constexprs={"BLOCK": 1024})``.

        Types: ``*fp32``, ``*fp16``, ``*i8``, ``i32``, ``i64``, ``fp32``... (any tiles dtype
        name); ``:16`` after one promises that the address or value is a multiple of 16.
        """
        specs = self.specs_from_signature(signature, constexprs or {})
        return self.compile_for(specs, _resolve_backend(backend), self._options(num_warps, num_stages))

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
                specs.append(_parse_type_string(name, types[name]))
            elif param.default is not inspect.Parameter.empty:
                specs.append(self.specialize({name: param.default})[0])
            else:
                kind = "constexprs" if name in self.constexprs else "signature"
                raise LaunchError(f"{self.__name__}: give a type for {name!r} in {kind}")
        return specs

    def _options(self, num_warps: int, num_stages: int) -> Options:
        debug = config.debug() if self.debug is None else bool(self.debug)
        return Options(num_warps=int(num_warps), num_stages=int(num_stages), debug=debug)


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


def _normalize_grid(g: Any, name: str) -> tuple[int, int, int]:
    if isinstance(g, int):
        g = (g,)
    try:
        dims = tuple(int(x) for x in g)
    except TypeError:
        raise LaunchError(f"{name}: the grid must be a tuple of 1 to 3 ints or a function of the "
                          f"meta-parameters returning one, got {g!r}") from None
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise LaunchError(f"{name}: the grid must have 1 to 3 non-negative sizes, got {dims}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def _written_params(kernel: Kernel) -> set[str]:
    """Names of pointer params whose memory some store or atomic may write."""
    from .analysis import written_params
    return written_params(kernel)


def jit(fn: Callable[..., Any] | None = None, *, do_not_specialize: Sequence[str | int] = (),
        debug: bool | None = None, **_ignored: Any) -> Any:
    """Decorator: make ``fn`` a tiles kernel (``kernel[grid](...)``) or device helper."""
    def wrap(f: Callable[..., Any]) -> JITFunction:
        return JITFunction(f, do_not_specialize, debug)
    return wrap(fn) if fn is not None else wrap
