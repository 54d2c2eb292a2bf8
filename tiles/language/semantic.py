"""Type checking and IR emission behind the operators and ``tl`` functions.

Operands are tensors or Python numbers.  Numbers are Triton constexprs: between
themselves they follow Python; against a tile they take the tile's type when
their kind is not higher (``computation_type``).
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from typing import Any

from .. import config
from ..core import attrs as A
from ..core import dtypes as D
from ..core.builder import current, user_loc
from ..core.dtypes import DType, PointerType, ScalarType
from ..core.errors import CompilationError, TritonRuleError
from ..core.ir import Value
from ..core.ops import Op
from .constexpr import constexpr
from .tensor import bind_rules, tensor
from .unsupported import Unsupported

Operand = Any  # tensor | bool | int | float


def error(message: str, kind: type[Exception] = ValueError) -> CompilationError:
    """The language refusing an operation: names the kernel's line; ``__cause__`` is ``kind(message)``."""
    return CompilationError(message, user_loc(), cause=kind(message))


def triton_rule(message: str) -> TritonRuleError | None:
    """Triton's refusal of something tiles accepts, when Triton's rules apply (the program runs in
    the Triton compatibility mode, where it must behave as under Triton); else ``None``."""
    return TritonRuleError(message, user_loc(), cause=ValueError(message)) if config.triton_rules() else None


def is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, numbers.Integral, numbers.Real)) and not isinstance(x, tensor)


def unwrap(x: Any) -> Any:
    """Plain Python value of a constexpr-like object (NumPy scalars included)."""
    if isinstance(x, constexpr):
        return x.value
    # (a tile first: asking a tile for ``item`` goes through its method lookup)
    if not isinstance(x, tensor) and hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        return x.item()
    return x


def wrap(v: Value) -> tensor:
    return tensor(v)


def emit(op: Op, operands: Sequence[tensor], attrs: Any = None) -> tensor:
    return wrap(current().emit1(op, [t.handle for t in operands], attrs))


def const(value: bool | int | float, dtype: DType, shape: tuple[int, ...] = ()) -> tensor:
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int:
        if not isinstance(value, (bool, int)) and not float(value).is_integer():
            raise error(f"the value {value!r} cannot be an integer constant of type {dtype}")
        value = _wrap_int(int(value), dtype)
    else:
        value = float(value)
    return wrap(current().emit1(Op.CONST, [], A.Const(value, dtype, tuple(shape))))


def _wrap_int(v: int, dtype: DType) -> int:
    bits = dtype.bits
    v &= (1 << bits) - 1
    if dtype.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def to_tensor(x: Operand) -> tensor:
    if isinstance(x, tensor):
        return x
    x = unwrap(x)
    if is_number(x):
        return const(x, D.literal_type(x))
    raise error(f"expected a tile or a number, got {type(x).__name__} {x!r}")


def as_dtype(d: Any) -> ScalarType:
    d = unwrap(d)
    if isinstance(d, (DType, PointerType)):
        return d
    if isinstance(d, Unsupported):
        d.fail()
    if isinstance(d, str) and d in D.BY_NAME:
        return D.BY_NAME[d]
    try:
        return D.from_numpy(d)
    except TypeError:
        raise error(f"{d!r} is not a tiles dtype (use tl.float32, tl.int32, ...)")  # noqa: B904  (__cause__ is the bare error)


# ---------------------------------------------------------------- shapes


def shape_arg(shape: Any) -> tuple[int, ...]:
    shape = unwrap(shape)
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        shape = unwrap(shape[0])
    out = []
    for s in shape:
        s = unwrap(s)
        if isinstance(s, tensor) or not isinstance(s, int):
            raise error(f"shapes must be compile-time integers (tl.constexpr), got {s!r}")
        out.append(int(s))
    return tuple(out)


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and 1 not in (x, y):
            raise error(f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def broadcast_to(t: Operand, shape: tuple[int, ...]) -> tensor:
    t = to_tensor(t)
    if t.handle.type.shape == shape or t.shape == shape:  # (the first: a plain tuple's ==, the usual case)
        return t
    if len(t.shape) > len(shape):
        raise error(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
    if t.shape and len(t.shape) < len(shape):
        t = reshape(t, (1,) * (len(shape) - len(t.shape)) + t.shape)
    if t.shape and broadcast_shapes(t.shape, shape) != shape:
        raise error(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
    return emit(Op.BROADCAST, [t], A.Shape(shape))


def reshape(t: Operand, shape: tuple[int, ...]) -> tensor:
    t = to_tensor(t)
    shape = tuple(shape)
    if t.shape == shape:
        return t
    if math.prod(shape) != t.numel:
        raise error(f"cannot reshape {list(t.shape)} ({t.numel} elements) to {list(shape)}")
    return emit(Op.RESHAPE, [t], A.Shape(shape))


def expand_dims(t: Operand, axis: Any) -> tensor:
    t = to_tensor(t)
    axis = unwrap(axis)
    axes = [unwrap(axis)] if not isinstance(axis, (tuple, list)) else [unwrap(a) for a in axis]
    shape = list(t.shape)
    ndim = len(shape) + len(axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise error(f"expand_dims: invalid axis {a} for a result of {ndim} dimensions "
                        f"(expected {-ndim} <= axis < {ndim})")
    normalized = [a + ndim if a < 0 else a for a in axes]
    if len(set(normalized)) != len(normalized):
        raise error(f"expand_dims: duplicate axes, normalized axes = {normalized}")
    for a in sorted(normalized):
        shape.insert(a, 1)
    return reshape(t, tuple(shape))


def permute(t: Operand, order: Sequence[int]) -> tensor:
    t = to_tensor(t)
    order = tuple(int(unwrap(o)) for o in order)
    if sorted(order) != list(range(t.ndim)):
        raise error(f"permute: {list(order)} is not a permutation of the {t.ndim} axes of {list(t.shape)}")
    if order == tuple(range(t.ndim)):
        return t
    return emit(Op.PERMUTE, [t], A.Permute(order))


def trans(t: Operand, *dims: Any) -> tensor:
    t = to_tensor(t)
    if dims and not (len(dims) == 1 and dims[0] is None):
        return permute(t, shape_arg(dims))
    if t.ndim < 2:
        raise error(f"trans needs at least 2 dimensions, got shape {list(t.shape)}")
    order = list(range(t.ndim))
    order[-1], order[-2] = order[-2], order[-1]
    return permute(t, order)


def split(t: tensor) -> tuple[tensor, tensor]:
    a, b = current().emit(Op.SPLIT, [t.handle])
    return wrap(a), wrap(b)


def subscript(t: tensor, index: Any) -> tensor:
    index = unwrap(index)
    if not isinstance(index, tuple):
        index = (index,)
    shape: list[int] = []
    src = 0
    for item in index:
        if item is None:
            shape.append(1)
        elif isinstance(item, slice) and item == slice(None):
            if src >= t.ndim:
                raise error(f"too many indices for a tile of shape {list(t.shape)}")
            shape.append(t.shape[src])
            src += 1
        elif item is Ellipsis:
            rest = t.ndim - src - sum(1 for i in index if i is not None and i is not Ellipsis) + 1
            shape.extend(t.shape[src:src + rest])
            src += rest
        else:
            raise error(f"unsupported tensor index: {item!r} (tiles can be indexed only with None and ':', "
                        "as in x[None, :] and x[:, None])")
    shape.extend(t.shape[src:])
    return reshape(t, tuple(shape))


# ---------------------------------------------------------------- casts


def cast(x: Operand, dtype: Any, bitcast: bool = False, rounding: str | None = None) -> tensor:
    t = to_tensor(x)
    dtype = as_dtype(dtype)
    src = t.dtype
    if src == dtype:
        return t
    if bitcast:
        if isinstance(src, PointerType) or isinstance(dtype, PointerType):
            raise error("bitcast between pointers and integers is not supported; use .to()")
        if src.bits != dtype.bits:
            raise error(f"bitcast needs equal widths, {src} has {src.bits} bits and {dtype} {dtype.bits}")
        return emit(Op.BITCAST, [t], A.Cast(dtype))
    if isinstance(dtype, PointerType):
        if isinstance(src, PointerType):
            return emit(Op.BITCAST, [t], A.Cast(dtype))
        if src not in (D.int64, D.uint64):
            t = cast(t, D.int64)
        return emit(Op.INT_TO_PTR, [t], A.Cast(dtype))
    if isinstance(src, PointerType):
        return cast(emit(Op.PTR_TO_INT, [t]), dtype)
    if rounding not in (None, "rtne", "rtz"):
        raise error(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    return emit(Op.CAST, [t], A.Cast(dtype, rounding or "rtne"))


# ---------------------------------------------------------------- binary ops


def _pair(a: Operand, b: Operand, div_or_mod: bool = False,
          allow_ptr: bool = False) -> tuple[tensor, tensor, DType]:
    a, b = unwrap(a), unwrap(b)
    a_lit, b_lit = not isinstance(a, tensor), not isinstance(b, tensor)
    ta = a if isinstance(a, tensor) else None
    tb = b if isinstance(b, tensor) else None
    a_ty = ta.dtype if ta is not None else D.literal_type(_number(a))
    b_ty = tb.dtype if tb is not None else D.literal_type(_number(b))
    if isinstance(a_ty, PointerType) or isinstance(b_ty, PointerType):
        raise error(f"this operator does not take pointers ({a_ty} and {b_ty})")
    try:
        ctype = D.computation_type(a_ty, a_lit, b_ty, b_lit, div_or_mod)
    except TypeError as e:
        raise error(str(e))  # noqa: B904  (__cause__ is the bare error)
    shape = broadcast_shapes(ta.shape if ta is not None else (), tb.shape if tb is not None else ())
    return _coerce(a, ctype, shape), _coerce(b, ctype, shape), ctype


def _number(x: Any) -> bool | int | float:
    if not is_number(x):
        raise error(f"expected a tile or a number, got {type(x).__name__} {x!r}")
    return x


def _coerce(x: Operand, dtype: DType, shape: tuple[int, ...]) -> tensor:
    if isinstance(x, tensor):
        return broadcast_to(cast(x, dtype), shape)
    if dtype.is_int and not isinstance(x, float):
        _check_literal(int(x), dtype)
    return const(x, dtype, shape)


def _check_literal(value: int, dtype: DType) -> None:
    """Refuse, as Triton does, a Python int that the tile's type cannot hold (no silent wrap)."""
    if value < 0 and not dtype.is_signed and not dtype.is_bool:
        raise error(f"cannot combine the negative number {value} with an unsigned {dtype} tile; "
                    f"cast one of them first (e.g. x.to(tl.int64))")
    low, high = (0, 1) if dtype.is_bool else \
        ((-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if dtype.is_signed else (0, (1 << dtype.bits) - 1))
    if not low <= value <= high:
        raise error(f"the number {value} is out of range for the {dtype} tile it meets "
                    f"([{low}, {high}]); cast the tile first (e.g. x.to(tl.int64)) or use a number in range")


_BINARY = {"add": Op.ADD, "sub": Op.SUB, "mul": Op.MUL}


def _arith(kind: str, a: Operand, b: Operand) -> tensor:
    x, y, _ = _pair(a, b)
    return emit(_BINARY[kind], [x, y])


def _is_ptr(x: Any) -> bool:
    return isinstance(x, tensor) and isinstance(x.dtype, PointerType)


def add_ptr(p: tensor, offset: Operand) -> tensor:
    off = to_tensor(offset)
    if not off.dtype.is_int or off.dtype.is_bool:
        raise error(f"pointer offsets must be integers, got {off.dtype}")
    shape = broadcast_shapes(p.shape, off.shape)
    return emit(Op.ADDPTR, [broadcast_to(p, shape), broadcast_to(off, shape)])


def add(a: Operand, b: Operand) -> tensor:
    if _is_ptr(a) and _is_ptr(b):
        raise error("cannot add two pointers")
    if _is_ptr(a):
        return add_ptr(a, b)
    if _is_ptr(b):
        return add_ptr(b, a)
    return _arith("add", a, b)


def sub(a: Operand, b: Operand) -> tensor:
    if _is_ptr(a):
        if _is_ptr(b):
            raise error("subtracting pointers is not supported; subtract their offsets instead")
        return add_ptr(a, neg(to_tensor(b)))
    return _arith("sub", a, b)


def mul(a: Operand, b: Operand) -> tensor:
    return _arith("mul", a, b)


def truediv(a: Operand, b: Operand, approximate: bool = True) -> tensor:
    """``a / b``; ``approximate`` (Triton's ``/``) lets a backend use its declared fast division."""
    x, y, ctype = _pair(a, b, div_or_mod=True)
    if ctype.is_int:
        x, y = cast(x, D.float32), cast(y, D.float32)
    return emit(Op.DIV, [x, y], A.Division(True) if approximate else None)


def fdiv(a: Operand, b: Operand, precise: bool, name: str, float32_only: bool = False) -> tensor:
    """``a / b`` of floating operands (after promotion), as Triton's ``fdiv`` and ``div_rn``:
    ``precise`` rounds to nearest, else the backend's declared division (``truediv``)."""
    x, y, ctype = _pair(a, b, div_or_mod=True)
    if not ctype.is_floating:
        raise error(f"{name} needs floating-point operands (after promotion they are {ctype}); convert them "
                    "first, e.g. x.to(tl.float32), or use / (which converts integers)", TypeError)
    if float32_only and ctype != D.float32:
        raise error(f"{name} with approx=True needs float32 operands, got {ctype}")
    return emit(Op.DIV, [x, y], None if precise else A.Division(True))


def floordiv(a: Operand, b: Operand) -> tensor:
    x, y, ctype = _pair(a, b, div_or_mod=True)
    if not ctype.is_int:
        raise error(f"// is defined for integer tiles only (got {ctype}); use / and tl.floor")
    return emit(Op.IDIV, [x, y])


def mod(a: Operand, b: Operand) -> tensor:
    x, y, _ = _pair(a, b, div_or_mod=True)
    return emit(Op.MOD, [x, y])


def _int_operands(kind: str, a: Operand, b: Operand) -> tuple[tensor, tensor, DType]:
    x, y, ctype = _pair(a, b)
    if not ctype.is_int:
        raise error(f"invalid operands of type {ctype} for {kind}: it needs integer operands", TypeError)
    return x, y, ctype


def bitwise(kind: str, a: Operand, b: Operand) -> tensor:
    x, y, _ = _int_operands(kind, a, b)
    return emit({"and": Op.AND, "or": Op.OR, "xor": Op.XOR}[kind], [x, y])


def shift(kind: str, a: Operand, b: Operand) -> tensor:
    """``a << b`` and ``a >> b`` on the promoted type.  As Triton (``tensor.__rshift__``), ``>>`` is
    arithmetic when the tile whose operator runs is signed (``a``; ``b`` for a number on the left)
    and logical otherwise, whatever the promoted type: ``int8 >> uint8`` shifts arithmetically in
    uint8 (-16 >> 2 gives 0xfc).  SHR itself follows its operand type, so the other case reads the
    operands' bits in the type of the other signedness and the result back."""
    owner = unwrap(a if isinstance(unwrap(a), tensor) else b)
    x, y, ctype = _int_operands(kind, a, b)
    if kind == "shl":
        return emit(Op.SHL, [x, y])
    arithmetic = isinstance(owner, tensor) and isinstance(owner.dtype, DType) and owner.dtype.is_signed
    if ctype.is_bool or arithmetic == ctype.is_signed:
        return emit(Op.SHR, [x, y])
    other = D.BY_NAME[("int" if arithmetic else "uint") + str(ctype.bits)]
    r = emit(Op.SHR, [cast(x, other, bitcast=True), cast(y, other, bitcast=True)])
    return cast(r, ctype, bitcast=True)


def neg(a: Operand) -> tensor:
    t = to_tensor(a)
    if isinstance(t.dtype, PointerType):
        raise error("cannot negate a pointer")
    return emit(Op.NEG, [t])


def invert(a: Operand) -> tensor:
    t = to_tensor(a)
    if not t.dtype.is_int:
        raise error(f"~ needs an integer tile, got {t.dtype}")
    return emit(Op.NOT, [t])


_CMP = {"eq": Op.EQ, "ne": Op.NE, "lt": Op.LT, "le": Op.LE, "gt": Op.GT, "ge": Op.GE}


def truth(x: Operand) -> tensor:
    """``x`` as a condition (int1): nonzero, a pointer by its address (Triton casts it to int1)."""
    t = to_tensor(x)
    if isinstance(t.dtype, PointerType):
        t = cast(t, D.int64)
    return t if t.dtype == D.int1 else compare("ne", t, 0)


_CMP_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _operand_type(x: Any) -> Any:
    x = unwrap(x)
    return x.dtype if isinstance(x, tensor) else D.literal_type(_number(x))


def compare(kind: str, a: Operand, b: Operand) -> tensor:
    if _is_ptr(a) or _is_ptr(b):  # Triton 3.9 refuses every comparison with a pointer operand
        ta, tb = _operand_type(a), _operand_type(b)
        hint = ("compare integer offsets instead" if _is_ptr(a) and _is_ptr(b) else
                "if the other operand is meant to be an integer (a size such as n), the launch passed "
                "an array or tensor in its place: pass an int")
        raise error(f"cannot compare {ta} with {tb} ({_CMP_SYMBOL[kind]}): as in Triton, comparisons "
                    f"do not take pointers; {hint}")
    x, y, _ = _pair(a, b)
    return emit(_CMP[kind], [x, y])


def minmax(kind: str, a: Operand, b: Operand, propagate_nan: bool = False) -> tensor:
    x, y, _ = _pair(a, b)
    op = {("max", False): Op.MAXIMUM, ("min", False): Op.MINIMUM,
          ("max", True): Op.MAXIMUM_NAN, ("min", True): Op.MINIMUM_NAN}[(kind, propagate_nan)]
    return emit(op, [x, y])


def where(cond: Operand, x: Operand, y: Operand) -> tensor:
    c = truth(cond)
    if _is_ptr(x) or _is_ptr(y):
        tx, ty = to_tensor(x), to_tensor(y)
        if tx.dtype != ty.dtype:
            raise error(f"where: pointer branches differ in type ({tx.dtype} and {ty.dtype})")
        shape = broadcast_shapes(broadcast_shapes(c.shape, tx.shape), ty.shape)
    else:
        tx, ty, _ = _pair(x, y)
        shape = broadcast_shapes(c.shape, tx.shape)
    return emit(Op.WHERE, [broadcast_to(c, shape), broadcast_to(tx, shape), broadcast_to(ty, shape)])


_MATH = {
    "exp": Op.EXP, "exp2": Op.EXP2, "log": Op.LOG, "log2": Op.LOG2, "sqrt": Op.SQRT,
    "rsqrt": Op.RSQRT, "sin": Op.SIN, "cos": Op.COS, "erf": Op.ERF, "floor": Op.FLOOR,
    "ceil": Op.CEIL, "abs": Op.ABS,
}


def unary_math(name: str, a: Operand) -> tensor:
    t = to_tensor(a)
    if name == "abs":
        if isinstance(t.dtype, PointerType):
            raise error("abs of a pointer")
        if t.dtype.is_bool or t.dtype.kind is D.Kind.UINT:
            return t
        return emit(Op.ABS, [t])
    if not t.dtype.is_floating or t.dtype.is_fp8:  # type: ignore[union-attr,arg-type,assignment]
        raise error(f"tl.{name} needs a floating-point tile (float16, bfloat16, float32, float64), "
                    f"got {t.dtype}; convert first with .to(tl.float32)")
    return emit(_MATH[name], [t])


def fma(a: Operand, b: Operand, c: Operand) -> tensor:
    x, y, ctype = _pair(a, b)
    z = to_tensor(c)
    shape = broadcast_shapes(x.shape, z.shape)
    ctype2 = D.computation_type(ctype, False, z.dtype, not isinstance(c, tensor))  # type: ignore[union-attr,arg-type,assignment]
    x, y = broadcast_to(cast(x, ctype2), shape), broadcast_to(cast(y, ctype2), shape)
    return emit(Op.FMA, [x, y, _coerce(c, ctype2, shape)])


_UMULHI_TYPES = ("int32", "int64", "uint32", "uint64")


def umulhi(a: Operand, b: Operand) -> tensor:
    """The high half of the unsigned double-width product of the bits (signed tiles too, as
    Triton); each tile operand must already be a 32- or 64-bit integer, as Triton checks."""
    for t in (unwrap(a), unwrap(b)):
        if isinstance(t, tensor) and t.dtype.name not in _UMULHI_TYPES:
            raise error(f"umulhi needs int32, int64, uint32 or uint64 tiles, got {t.dtype}; "
                        f"convert first with .to(tl.int32)")
    x, y, ctype = _pair(a, b)
    if not ctype.is_int or ctype.bits not in (32, 64):
        raise error(f"umulhi needs 32- or 64-bit integers, got {ctype}")
    return emit(Op.UMULHI, [x, y])


bind_rules(sys.modules[__name__])  # tensor operators record IR through these rules
