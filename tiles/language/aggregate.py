"""``@triton.aggregate``: a class of tiles and compile-time values that kernels build, pass to
``@jit`` functions, carry through loops and branch on, as one value.

    @tiles.aggregate            # (triton.aggregate in the compatibility mode)
    class Window:
        base: tl.tensor
        BLOCK: tl.constexpr = 64

        @tiles.jit
        def load(self, offs):
            return tl.load(self.base + offs, mask=offs < self.BLOCK)

The fields are the class's annotations (a subclass adds its own to its aggregate bases'); a class
value that is not a method is the field's default.  Without an ``__init__`` of its own the class
takes the fields positionally or by name; with one, that ``__init__`` must set every field.
Afterwards the value is immutable: ``tl.aggregate_replace(v, field=new)`` gives a modified copy.
A ``tl.constexpr`` field holds a ``tl.constexpr`` (a plain value is wrapped), and so does every
plain number in a tuple field; in a kernel a number given to a ``tl.tensor`` field becomes a
scalar tile.  ``@jit`` methods are called with the value as ``self``; ``@constexpr_function``
methods and plain methods too.

tiles traces kernels as Python, so an aggregate is an ordinary Python object while a kernel is
traced: loops and ``if``s carry its tiles (``tiles_flatten``), its compile-time fields stay
compile-time.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

from ..core.builder import is_tracing
from ..core.dtypes import DType
from .constexpr import constexpr
from .tensor import tensor

_MISSING = object()
_INIT_DONE = "_tiles_aggregate_complete"


class _JitMethod:
    """A ``@jit`` function in an aggregate's body: bound to the instance it is read from
    (``self.method(...)``), the function itself when read from the class (``Cls.create(...)``)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self.fn if obj is None else functools.partial(self.fn, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _is_jit(value: Any) -> bool:
    """A ``@jit`` function (the runtime's JITFunction, known by its traced body: the language
    layer does not import the runtime)."""
    return isinstance(getattr(type(value), "rewritten", None), property) and hasattr(value, "fn")


def _own_fields(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    own = cls.__dict__.get("__annotations__", {})
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # a forward reference to a name that is not defined (yet): keep the text
        hints = {}
    annotations = {name: hints.get(name, ann) for name, ann in own.items()}
    defaults = {}
    for name in own:
        value = cls.__dict__.get(name, _MISSING)
        if value is not _MISSING and (not callable(value) or isinstance(value, constexpr)):
            defaults[name] = value
    return annotations, defaults


def _fields(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields of ``cls`` and their defaults, its aggregate bases' first."""
    annotations: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for base in reversed(cls.__mro__[1:]):
        if base is object:
            continue
        if "__aggregate_fields__" not in base.__dict__:
            raise TypeError(f"Aggregates can only inherit from other aggregates: {cls.__qualname__} "
                            f"inherits from {base.__qualname__}, which is not a @triton.aggregate class")
        annotations.update(base.__dict__["__aggregate_annotations__"])
        defaults.update(base.__dict__["__aggregate_defaults__"])
    own, own_defaults = _own_fields(cls)
    annotations.update(own)
    defaults.update(own_defaults)
    return annotations, defaults


def _wrap_value(value: Any, annotation: Any) -> Any:
    """What a field holds for ``value``: plain numbers (and dtypes) as constexprs, in tuples too;
    a number (or a constexpr number) given to a ``tl.tensor`` field becomes a scalar tile in a kernel."""
    plain = value.value if isinstance(value, constexpr) else value
    if annotation is tensor and isinstance(plain, (bool, int, float)) and is_tracing():
        from . import semantic as S  # (a specialized ``1`` argument is a constexpr)
        return S.to_tensor(plain)
    if isinstance(value, tuple):
        items = [_wrap_value(v, None) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if value is None or isinstance(value, (bool, int, float, str, DType)):
        return constexpr(value)
    return value


def _check_type(cls: type, name: str, value: Any, annotation: Any) -> None:
    if annotation is constexpr or not isinstance(annotation, type) or isinstance(value, annotation):
        return
    if isinstance(value, constexpr) and isinstance(value.value, annotation):  # a dtype field: tl.dtype
        return
    raise TypeError(f"{cls.__name__}.{name} is annotated {annotation.__name__} but was given "
                    f"{type(value).__name__} {value!r}")


def aggregate(cls: type) -> type:
    """Make ``cls`` an aggregate (module docstring); returns the class itself."""
    annotations, defaults = _fields(cls)
    names = tuple(annotations)
    user_init = cls.__dict__.get("__init__")
    if getattr(user_init, "__tiles_constexpr_function__", False):
        user_init = user_init.__wrapped__  # type: ignore[union-attr]

    def auto_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} field values but {len(args)} were given")
        for i, name in enumerate(names):
            if i < len(args):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__}() got multiple values for field {name!r}")
                value = args[i]
            elif name in kwargs:
                value = kwargs.pop(name)
            elif name in defaults:
                value = defaults[name]
            else:
                raise TypeError(f"{cls.__name__}() missing a value for field {name!r}")
            setattr(self, name, value)
        if kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, _INIT_DONE, False)
        for key in ("_semantic", "_generator"):  # Triton's builder handles: tiles has none
            kwargs.pop(key, None)
        if user_init is None:
            auto_init(self, *args, **kwargs)
        else:
            user_init(self, *args, **kwargs)
        for name in names:
            if name not in self.__dict__:
                raise AttributeError(f"the constructor of {cls.__name__} did not set field {name!r}")
        object.__setattr__(self, _INIT_DONE, True)

    def set_field(self: Any, name: str, value: Any) -> None:
        if name not in annotations:
            raise AttributeError(f"{cls.__name__} has no field {name!r} (its fields: {', '.join(names)})")
        if self.__dict__.get(_INIT_DONE, False):
            raise AttributeError(f"cannot assign to field {name!r} on immutable aggregate {cls.__name__}; "
                                 f"use tl.aggregate_replace() to construct a modified copy")
        value = _wrap_value(value, annotations[name])
        _check_type(cls, name, value, annotations[name])
        object.__setattr__(self, name, value)

    def identity(self: Any) -> tuple[Any, ...]:
        """Compile-time fields by value, the rest by object: two instances of equal constexprs are
        one compile-time argument (one compiled kernel), as tuples of constexprs are."""
        out: list[Any] = [type(self)]
        for name in names:
            value = self.__dict__.get(name)
            if isinstance(value, constexpr):
                out.append(("c", value.value))
            elif isinstance(value, tuple) and not any(isinstance(v, tensor) for v in value):
                out.append(("t", value))
            else:
                out.append(("o", id(value)))
        return tuple(out)

    def same(self: Any, other: Any) -> bool:
        return type(other) is type(self) and bool(identity(self) == identity(other))

    def hash_(self: Any) -> int:
        return hash(identity(self))

    def show(self: Any) -> str:
        return f"{cls.__name__}({', '.join(f'{n}={self.__dict__.get(n)!r}' for n in names)})"

    def tiles_flatten(self: Any) -> tuple[list[Any], Any]:
        """The tiles a loop or an ``if`` carries; the compile-time fields go in the structure."""
        from .control import _flatten
        leaves: list[Any] = []
        parts: list[tuple[Any, Any]] = []
        for name in names:
            value = self.__dict__[name]
            if isinstance(value, constexpr):
                parts.append(("static", value.value))
                continue
            sub, aux = _flatten(value)
            parts.append((len(sub), aux))
            leaves += sub
        return leaves, tuple(parts)

    @classmethod  # type: ignore[misc]
    def tiles_unflatten(kind: type, aux: Any, leaves: list[Any]) -> Any:
        from .control import _unflatten
        out: Any = object.__new__(kind)
        i = 0
        for name, (count, sub) in zip(names, aux):
            if count == "static":
                value: Any = constexpr(sub)
            else:
                value = _unflatten(sub, leaves[i:i + count])
                i += count
            object.__setattr__(out, name, value)
        object.__setattr__(out, _INIT_DONE, True)
        return out

    init.__qualname__ = f"{cls.__qualname__}.__init__"
    members = {"__init__": init, "__setattr__": set_field, "tiles_flatten": tiles_flatten,
               "tiles_unflatten": tiles_unflatten, "__aggregate_fields__": names,
               "__aggregate_annotations__": annotations, "__aggregate_defaults__": defaults,
               "__triton_aggregate__": True}
    for name, value in members.items():
        setattr(cls, name, value)
    if "__eq__" not in cls.__dict__:
        cls.__eq__ = same  # type: ignore[assignment,method-assign]
        cls.__hash__ = hash_  # type: ignore[assignment,method-assign]
    if "__repr__" not in cls.__dict__:
        setattr(cls, "__repr__", show)  # noqa: B010
    for name, member in list(cls.__dict__.items()):
        if _is_jit(member):
            setattr(cls, name, _JitMethod(member))
    return cls


def aggregate_replace(instance: Any, **changes: Any) -> Any:
    """A copy of the aggregate ``instance`` with the fields ``changes`` names replaced."""
    kind = type(instance)
    if not getattr(kind, "__triton_aggregate__", False):
        raise TypeError(f"aggregate_replace() expects an aggregate instance, got {kind}")
    for name in changes:
        if name not in kind.__aggregate_fields__:
            raise TypeError(f"{kind.__name__} has no field {name!r}")
    values = {name: instance.__dict__[name] for name in kind.__aggregate_fields__} | changes
    out = object.__new__(kind)
    object.__setattr__(out, _INIT_DONE, False)
    for name, value in values.items():
        setattr(out, name, value)
    object.__setattr__(out, _INIT_DONE, True)
    return out
