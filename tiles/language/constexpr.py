"""``tl.constexpr``: a compile-time value, as Triton's kernels see one.

Inside a traced kernel, constexpr parameters and ``tl.constexpr(v)`` are
``constexpr`` objects: ``.value`` is the plain Python value; arithmetic and
comparisons between constexprs and Python values give constexprs; mixed with a
tile they give a tile.  ``int()``, ``bool()``, ``hash()``, indexing and
``range()`` see the plain value, so ``{4: a}[BLOCK]`` and ``range(BLOCK)`` work.
Specialization and cache keys always use plain values (``unwrap``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from ..core.builder import is_tracing, user_loc
from ..core.errors import CompilationError
from .tensor import tensor


def unwrap(x: Any) -> Any:
    """The plain value of a constexpr; anything else unchanged."""
    return x.value if isinstance(x, constexpr) else x


def as_constexpr(x: Any) -> Any:
    """``x`` as a constexpr object, as a kernel sees a compile-time argument (None, strings and
    tiles unchanged: a string argument stays usable where Python wants a ``str``, as in
    ``getattr(tl, OP)``, which Triton allows by unwrapping builtins' arguments)."""
    return x if x is None or isinstance(x, (constexpr, str)) or _is_tile(x) else constexpr(x)


def _is_tile(x: Any) -> bool:
    return isinstance(x, tensor)


def _binary(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[constexpr, Any], Any]:
    def method(self: constexpr, other: Any) -> Any:
        a, b = self.value, unwrap(other)
        result = op(b, a) if reflected else op(a, b)
        return result if _is_tile(result) else constexpr(result)
    return method


def _unary(op: Callable[[Any], Any]) -> Callable[[constexpr], Any]:
    def method(self: constexpr) -> Any:
        result = op(self.value)
        return result if _is_tile(result) else constexpr(result)
    return method


class constexpr:  # noqa: N801  (Triton's spelling)
    """A compile-time value: ``constexpr(3).value == 3``; also the parameter annotation."""

    __slots__ = ("value",)
    value: Any

    def __init__(self, value: Any = None) -> None:
        object.__setattr__(self, "value", unwrap(value))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("constexpr values are immutable")

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return operator.index(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Any:
        return iter(self.value)

    def __getitem__(self, key: Any) -> Any:
        return self.value[unwrap(key)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value(*args, **kwargs)

    @property
    def type(self) -> Any:
        """``constexpr_type(value)``, as Triton's ``x.type`` of a compile-time value (so a tuple
        argument's specialized ``1`` or a ``tl.constexpr`` element answers as one)."""
        return constexpr_type(self.value)

    def __getattr__(self, name: str) -> Any:
        # Attribute access reaches the value, as in Triton (``DTYPE.is_fp16()``).
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "value"), name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (constexpr, (self.value,))

    def logical_and(self, other: Any) -> constexpr:
        return constexpr(self.value and unwrap(other))

    def logical_or(self, other: Any) -> constexpr:
        return constexpr(self.value or unwrap(other))

    __add__ = _binary(operator.add)
    __radd__ = _binary(operator.add, reflected=True)
    __sub__ = _binary(operator.sub)
    __rsub__ = _binary(operator.sub, reflected=True)
    __mul__ = _binary(operator.mul)
    __rmul__ = _binary(operator.mul, reflected=True)
    __truediv__ = _binary(operator.truediv)
    __rtruediv__ = _binary(operator.truediv, reflected=True)
    __floordiv__ = _binary(operator.floordiv)
    __rfloordiv__ = _binary(operator.floordiv, reflected=True)
    __mod__ = _binary(operator.mod)
    __rmod__ = _binary(operator.mod, reflected=True)
    __pow__ = _binary(operator.pow)
    __rpow__ = _binary(operator.pow, reflected=True)
    __and__ = _binary(operator.and_)
    __rand__ = _binary(operator.and_, reflected=True)
    __or__ = _binary(operator.or_)
    __ror__ = _binary(operator.or_, reflected=True)
    __xor__ = _binary(operator.xor)
    __rxor__ = _binary(operator.xor, reflected=True)
    __lshift__ = _binary(operator.lshift)
    __rlshift__ = _binary(operator.lshift, reflected=True)
    __rshift__ = _binary(operator.rshift)
    __rrshift__ = _binary(operator.rshift, reflected=True)
    __eq__ = _binary(operator.eq)  # type: ignore[assignment]
    __ne__ = _binary(operator.ne)  # type: ignore[assignment]
    __lt__ = _binary(operator.lt)
    __le__ = _binary(operator.le)
    __gt__ = _binary(operator.gt)
    __ge__ = _binary(operator.ge)
    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __invert__ = _unary(operator.invert)
    __abs__ = _unary(abs)


class constexpr_type:  # noqa: N801
    """The type of a constexpr value (Triton's ``constexpr_type``)."""

    def __init__(self, value: Any) -> None:
        self.value = unwrap(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


def constexpr_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Triton's ``@triton.constexpr_function``: a plain Python function that kernels call on
    compile-time values (constexpr arguments, dtypes, shapes).  Inside a kernel its arguments
    arrive as plain values and its result is a constexpr; called from the host it is the function
    itself.  A run-time tile as an argument is a CompilationError naming the kernel line."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        for a in (*args, *kwargs.values()):
            if _is_tile(a):
                message = (f"{fn.__name__} is a constexpr_function: its arguments must be compile-time "
                           f"values (tl.constexpr parameters, dtypes, Python numbers), not the run-time "
                           f"tile {a.type}; make the argument a tl.constexpr or compute it with tl ops")
                raise CompilationError(message, user_loc(), cause=ValueError(message))  # as semantic.error
        result = fn(*map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()})
        return as_constexpr(result) if is_tracing() else result

    call.__tiles_constexpr_function__ = True  # type: ignore[attr-defined]
    return call
