"""``@tiles.heuristics``: meta-parameters computed from the launch arguments.

Stacks like Triton's: ``@autotune`` outermost, then ``@heuristics``, then ``@jit``.
Each rule receives a dict of the named arguments (defaults included, plus the
values earlier rules produced) and its result is passed as a constexpr keyword.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends.base import CompiledKernel
from .jit import Grid, JITFunction, KernelInterface

Rule = Callable[[dict[str, Any]], Any]


def unwrap(fn: Any) -> JITFunction:
    """The ``@jit`` function under any stack of ``@autotune``/``@heuristics`` wrappers."""
    inner = fn
    while not isinstance(inner, JITFunction):
        if not hasattr(inner, "fn"):
            raise TypeError(f"{fn!r} is not a @tiles.jit function (or one wrapped by "
                            "@tiles.autotune / @tiles.heuristics)")
        inner = inner.fn
    return inner


def named_arguments(jit_fn: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Launch arguments by parameter name, defaults filled in; extra keywords kept as given.

    Runs on every launch of an ``@autotune``/``@heuristics`` kernel, so it zips names instead of
    binding a signature (which costs tens of microseconds on a kernel of 30 parameters)."""
    names = jit_fn.arg_names
    if len(args) > len(names):  # the launch itself reports the surplus
        return {**dict(zip(names, args)), **kwargs}
    named = dict(jit_fn.defaults)
    named.update(zip(names, args))
    named.update(kwargs)
    return named


class Heuristics(KernelInterface):
    """A kernel whose listed meta-parameters are computed by ``values[name](args)`` (Triton's
    ``Heuristics``, same constructor).

    Stacked ``@heuristics`` decorators make one layer (``heuristics`` below): its rules run
    outermost decorator first, each seeing the values the earlier ones produced, as a stack of
    layers would, but the arguments are named once per launch instead of once per layer."""

    def __init__(self, fn: Any, arg_names: list[str] | None, values: dict[str, Rule],
                 rules: list[tuple[str, Rule]] | None = None) -> None:
        self.fn = fn
        self.rules = list(values.items()) if rules is None else rules
        self.values = dict(self.rules)
        self.jit_fn = unwrap(fn)
        self.arg_names = list(arg_names) if arg_names else self.jit_fn.arg_names
        self.__name__ = self.jit_fn.__name__
        self.base_fn = self.jit_fn.fn  # Triton's name: the Python function under the decorators

    def _with_heuristics(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = dict(kwargs)
        named = named_arguments(self.jit_fn, args, {})
        for name, rule in self.rules:
            kwargs[name] = rule({**named, **kwargs})
        return kwargs

    def run(self, *args: Any, grid: Grid, warmup: bool = False, **kwargs: Any) -> CompiledKernel:
        return self.fn.run(*args, grid=grid, warmup=warmup, **self._with_heuristics(args, kwargs))

    def warmup(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        return self.fn.warmup(*args, **self._with_heuristics(args, kwargs))


def heuristics(values: dict[str, Rule]) -> Callable[[Any], Heuristics]:
    """Decorator: ``@tiles.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})``."""
    if not isinstance(values, dict) or not all(callable(v) for v in values.values()):
        raise TypeError("tiles.heuristics takes a dict of meta-parameter name -> function(args)")

    def wrap(fn: Any) -> Heuristics:
        if isinstance(fn, Heuristics):  # a stack: one layer, this decorator's rules first
            return Heuristics(fn.fn, fn.arg_names, {}, rules=list(values.items()) + fn.rules)
        return Heuristics(fn, unwrap(fn).arg_names, values)
    return wrap
