"""The module globals a compiled kernel baked in, and the check that they still hold.

A kernel (and every ``@jit`` helper or user function it reaches) may read module globals such
as ``K = tl.constexpr(2.0)``; tracing bakes their values into the code.  As in Triton, the
values seen by a kernel's first compile are recorded (``record``), and a launch after one of
them was rebound to a different value raises ``GlobalChangedError`` (a ``RuntimeError``, as
Triton's ``"Global variable K has changed since we compiled this kernel, from ... to ..."``)
instead of running stale code; rebinding it to an equal value, or back, is fine.

Cost: a kernel that reads no such global has no guard, and its launches check nothing; one that
does checks each guard with a dict lookup and an identity test, on the Python launch path (the
jit's launch function and general path) and in CUDA's native hot launch (``runtime/hot_path.py``,
``backends/cuda/launch/hot_launch.py``), which declines to the launch function when a global is not the
object it was compiled with; the launch function then raises or, for an equal value, takes the
new object and rebuilds the hot launches.  The disk cache keys on the
globals' values (``fingerprint.source_fingerprint``), so a new process never reuses code
compiled for other values.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

from ..core.dtypes import DType, PointerType
from ..core.errors import LaunchError
from ..core.ir import Loc
from ..language.constexpr import constexpr
from .fingerprint import globals_read, reached_functions

_ABSENT = object()
_PLAIN = (bool, int, float, complex, str, bytes)
_TOOLKITS = ("tiles", "triton", "numpy", "torch", "math", "builtins")


class GlobalChangedError(LaunchError, RuntimeError):
    """A module global a compiled kernel read was rebound to another value (Triton raises a
    ``RuntimeError`` with the same first sentence)."""


class Guard:
    """One global a kernel's code depends on: where it lives, its name, the value it had."""

    __slots__ = ("namespace", "name", "value")

    def __init__(self, namespace: dict[str, Any], name: str, value: Any) -> None:
        self.namespace, self.name, self.value = namespace, name, value


def _guarded(value: Any) -> bool:
    """Whether ``value`` is data whose rebinding changes a kernel (not a function, module or class)."""
    if isinstance(value, (constexpr, DType, PointerType, *_PLAIN)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_guarded(v) for v in value)
    return False


def _toolkit(namespace: dict[str, Any]) -> bool:
    """A namespace of tiles, Triton, NumPy, torch or the standard library (``tl.float32``...)."""
    name = namespace.get("__name__")
    return type(name) is str and name.split(".")[0] in _TOOLKITS


def record(jit_fn: Any) -> list[Guard]:
    """The guards of ``jit_fn``: every guarded global it or a function it reaches reads now."""
    guards: dict[tuple[int, str], Guard] = {}
    for fn in reached_functions(jit_fn):
        for namespace, name, value in globals_read(fn):
            if isinstance(value, types.ModuleType) or not _guarded(value) or _toolkit(namespace):
                continue
            guards.setdefault((id(namespace), name), Guard(namespace, name, value))
    return list(guards.values())


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types (a constexpr's and its value's), as compiled code sees them."""
    if type(a) is not type(b):
        return False
    if isinstance(a, constexpr):
        a, b = a.value, b.value
        if type(a) is not type(b):
            return False
    try:
        return bool(a == b)
    except Exception:  # a value without a plain equality
        return False


def check(guards: Sequence[Guard], loc: Loc, kernel: str) -> bool:
    """Raise ``GlobalChangedError`` if a guarded global now holds a different value; True when one
    was rebound to an equal value (now the guard's object)."""
    renewed = False
    for guard in guards:
        now = guard.namespace.get(guard.name, _ABSENT)
        if now is guard.value:
            continue
        if now is not _ABSENT and _same(now, guard.value):
            guard.value = now  # rebound to an equal value: keep the identity test fast
            renewed = True
            continue
        shown: Any = "<deleted>" if now is _ABSENT else now
        raise GlobalChangedError(
            f"{loc}: Global variable {guard.name} has changed since we compiled this kernel, from "
            f"{guard.value!r} to {shown!r} ({kernel} baked the value in when it was first compiled, as "
            f"Triton does). Restore it, or pass it as a tl.constexpr argument to vary it between launches")
    return renewed
