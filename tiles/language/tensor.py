"""``tl.tensor``: the proxy a kernel computes with while it is traced.

Each operator records one or more IR instructions through ``semantic``; Python
numbers mixed in stay Python numbers until they meet a tile (Triton's constexpr
semantics: ``7 // -2`` is Python's ``-4`` but ``tile // -2`` truncates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.dtypes import DType, PointerType, ScalarType
from ..core.ir import TileType, Value
from ..core.live import live
from .shape import Shape

# The rules the operators record IR with: ``semantic``, which builds tensors and so imports this
# module, binds itself here when it is imported (``bind_rules``), before any kernel is traced.
S: Any = None

# Functions Triton also offers as tensor methods (``x.sum(0)``, ``p.load()``): filled by
# ``_methods.py`` and ``core._tensor_member_fn``, which sit above the modules defining them.
METHODS: dict[str, Callable[..., Any]] = {}


def bind_rules(semantic: Any) -> None:
    """Make ``semantic`` (the module) the rules of tensor operators."""
    global S
    S = semantic


class tensor:  # noqa: N801  (Triton's spelling)
    """A tile (or scalar) value of the kernel being compiled; its operators record IR."""
    __slots__ = ("handle",)

    def __init__(self, handle: Value) -> None:
        self.handle = handle

    @property
    def type(self) -> TileType:
        return self.handle.type

    @property
    def dtype(self) -> ScalarType:
        return self.handle.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The tile's sizes (a ``Shape``: ``x.shape == [BLOCK]`` holds, as in Triton)."""
        return Shape(self.handle.type.shape)

    @property
    def numel(self) -> int:
        return self.handle.type.numel

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        v = live(self.handle)
        if v is not None:  # stepping mode: the program's data
            return v.session.format(v)
        return f"tensor({self.handle!r}: {self.type})"

    # data (stepping mode only: TILES_INTERPRET=step, docs/debugging.md) ------------
    def numpy(self) -> Any:
        """This program's value as a NumPy array (a copy; pointers as int64 addresses).  There is no
        ``__array__``: NumPy operators and ufuncs on tiles (``np.float32(2) * x``) keep their meaning."""
        import numpy as np
        return np.array(_host(self))

    def tolist(self) -> Any:
        return _host(self).tolist()

    def __int__(self) -> int:
        return int(_host(self))

    def __float__(self) -> float:
        return float(_host(self))

    def __bool__(self) -> bool:
        v = live(self.handle)
        if v is not None:
            return bool(v.session.truth(v))
        from ..core.builder import user_loc
        from ..core.errors import CompilationError
        raise CompilationError(
            "the truth value of a tile is only known when the kernel runs; use tl.where, "
            "or an `if` on a scalar (ifs are rewritten into IR only at statement level)",
            user_loc())

    def __index__(self) -> int:
        v = live(self.handle)
        if v is not None and getattr(v.type.dtype, "is_int", False) and not v.type.shape:
            return int(v.session.host(v))
        from ..core.builder import user_loc
        from ..core.errors import CompilationError
        raise CompilationError("a run-time value was used where a Python int (constexpr) is "
                               "needed; mark the argument `tl.constexpr`", user_loc())

    # arithmetic ------------------------------------------------------------
    def __add__(self, o: Any) -> tensor: return S.add(self, o)
    def __radd__(self, o: Any) -> tensor: return S.add(o, self)
    def __sub__(self, o: Any) -> tensor: return S.sub(self, o)
    def __rsub__(self, o: Any) -> tensor: return S.sub(o, self)
    def __mul__(self, o: Any) -> tensor: return S.mul(self, o)
    def __rmul__(self, o: Any) -> tensor: return S.mul(o, self)
    def __truediv__(self, o: Any) -> tensor: return S.truediv(self, o)
    def __rtruediv__(self, o: Any) -> tensor: return S.truediv(o, self)
    def __floordiv__(self, o: Any) -> tensor: return S.floordiv(self, o)
    def __rfloordiv__(self, o: Any) -> tensor: return S.floordiv(o, self)
    def __mod__(self, o: Any) -> tensor: return S.mod(self, o)
    def __rmod__(self, o: Any) -> tensor: return S.mod(o, self)
    def __and__(self, o: Any) -> tensor: return S.bitwise("and", self, o)
    def __rand__(self, o: Any) -> tensor: return S.bitwise("and", o, self)
    def __or__(self, o: Any) -> tensor: return S.bitwise("or", self, o)
    def __ror__(self, o: Any) -> tensor: return S.bitwise("or", o, self)
    def __xor__(self, o: Any) -> tensor: return S.bitwise("xor", self, o)
    def __rxor__(self, o: Any) -> tensor: return S.bitwise("xor", o, self)
    def __lshift__(self, o: Any) -> tensor: return S.shift("shl", self, o)
    def __rlshift__(self, o: Any) -> tensor: return S.shift("shl", o, self)
    def __rshift__(self, o: Any) -> tensor: return S.shift("shr", self, o)
    def __rrshift__(self, o: Any) -> tensor: return S.shift("shr", o, self)
    def __neg__(self) -> tensor: return S.neg(self)
    def __pos__(self) -> tensor: return self
    def __invert__(self) -> tensor: return S.invert(self)
    def __abs__(self) -> tensor: return S.unary_math("abs", self)

    def __eq__(self, o: Any) -> tensor: return S.compare("eq", self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> tensor: return S.compare("ne", self, o)  # type: ignore[override]
    def __lt__(self, o: Any) -> tensor: return S.compare("lt", self, o)
    def __le__(self, o: Any) -> tensor: return S.compare("le", self, o)
    def __gt__(self, o: Any) -> tensor: return S.compare("gt", self, o)
    def __ge__(self, o: Any) -> tensor: return S.compare("ge", self, o)

    __hash__ = object.__hash__

    # shape ---------------------------------------------------------------
    def __getitem__(self, index: Any) -> tensor:
        return S.subscript(self, index)

    @property
    def T(self) -> tensor:  # noqa: N802
        return S.permute(self, tuple(reversed(range(self.ndim))))

    def to(self, dtype: DType | PointerType, fp_downcast_rounding: str | None = None,
           bitcast: bool = False) -> tensor:
        return S.cast(self, dtype, bitcast=bitcast, rounding=fp_downcast_rounding)

    def reshape(self, *shape: Any, can_reorder: bool = False) -> tensor:
        return S.reshape(self, S.shape_arg(shape))

    def view(self, *shape: Any) -> tensor:
        return S.reshape(self, S.shape_arg(shape))

    def trans(self, *dims: Any) -> tensor:
        return S.trans(self, *dims)

    def permute(self, *dims: Any) -> tensor:
        return S.permute(self, S.shape_arg(dims))

    def broadcast_to(self, *shape: Any) -> tensor:
        return S.broadcast_to(self, S.shape_arg(shape))

    def expand_dims(self, axis: Any) -> tensor:
        return S.expand_dims(self, axis)

    def split(self) -> tuple[tensor, tensor]:
        return S.split(self)

    # reductions as methods (Triton exposes many tl functions on tensors) --------
    def __getattr__(self, name: str) -> Any:
        fn = METHODS.get(name)
        if fn is None:
            raise AttributeError(f"tl.tensor has no attribute {name!r}")
        return lambda *a, **k: fn(self, *a, **k)


def _host(t: tensor) -> Any:
    """The stepped program's data of ``t``.  While tracing: an error, a DataNeededError when the
    kernel's own code asked (stepping mode then steps every program), else the TypeError that
    ``int()``/``float()`` of a non-number has always given inside tiles."""
    v = live(t.handle)
    if v is None:
        import sys

        from ..core.builder import KERNEL_CODES, user_loc
        from ..core.live import DataNeededError
        if sys._getframe(2).f_code not in KERNEL_CODES:
            raise TypeError(f"a traced tile ({t.type}) has no value yet")
        raise DataNeededError("a tile's data exists only when the kernel runs; to look at values, "
                              "run the kernel in stepping mode (TILES_INTERPRET=step, "
                              "docs/debugging.md) or print them with tl.device_print", user_loc())
    return v.session.host(v)
