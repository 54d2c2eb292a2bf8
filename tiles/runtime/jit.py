"""``@tiles.jit``: specialize, trace once per specialization, compile, launch."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import config
from ..backends import registry
from ..backends.base import Backend, CompiledKernel, LaunchArg, Options
from ..core import passes
from ..core.builder import Builder, is_tracing, tb_loc, tracing
from ..core.dtypes import PointerType
from ..core.errors import CompilationError, LaunchError, TilesError
from ..core.frontend import rewrite
from ..core.ir import Kernel, Loc, Param, Value, TileType
from ..core.printer import format_kernel
from .specialize import ArgSpec, classify

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
        self.loc = Loc(fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__name__)

    # -- tracing -------------------------------------------------------------
    @property
    def rewritten(self) -> Callable[..., Any]:
        if self._rewritten is None:
            self._rewritten, self.source = rewrite(self.fn)
        return self._rewritten

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not is_tracing():
            raise LaunchError(f"{self.__name__} is a @tiles.jit function: launch it with "
                              f"{self.__name__}[grid](...) instead of calling it from host code")
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return self.rewritten(*bound.args, **bound.kwargs)

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"{self.__name__}({', '.join(self.arg_names)}): {e}") from None
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
            kernel = self.trace(specs)
            compiled = backend.compile(kernel, options)
            compiled.asm.setdefault("ir", format_kernel(kernel))
            for stage in config.dump_stages():
                if stage in compiled.asm:
                    print(f"// ---- {self.__name__}: {stage}\n{compiled.asm[stage]}", file=sys.stderr)
            self.cache[key] = compiled
        return compiled

    def run(self, *args: Any, grid: Grid, num_warps: int = 4, num_stages: int = 3,
            backend: str | Backend | None = None, **kwargs: Any) -> CompiledKernel:
        bound = self._bind(args, kwargs)
        be = backend if isinstance(backend, Backend) else (
            registry.get(backend) if backend else registry.default())
        specs = self.specialize(bound)
        options = Options(num_warps=int(num_warps), num_stages=int(num_stages),
                          debug=bool(self.debug))
        compiled = self.compile_for(specs, be, options)
        g = grid(bound) if callable(grid) else grid
        launch_grid = _normalize_grid(g, self.__name__)
        written = _written_params(compiled.ir)
        launch_args = [LaunchArg(s.name, bound[s.name], isinstance(s.type, PointerType),
                                 s.name in written)
                       for s in specs if not s.constexpr]
        if all(n > 0 for n in launch_grid):
            be.launch(compiled, launch_grid, launch_args)
        return compiled

    def warmup(self, *args: Any, grid: Grid = (1,), num_warps: int = 4, num_stages: int = 3,
               backend: str | Backend | None = None, **kwargs: Any) -> CompiledKernel:
        """Compile for these arguments without launching."""
        bound = self._bind(args, kwargs)
        be = backend if isinstance(backend, Backend) else (
            registry.get(backend) if backend else registry.default())
        return self.compile_for(self.specialize(bound), be,
                                Options(int(num_warps), int(num_stages), bool(self.debug)))


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
