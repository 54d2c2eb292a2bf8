"""Element types of tiles and Triton's promotion rules.

A ``DType`` is an element type (``int32``, ``float16``...); a ``PointerType`` is a
pointer to elements of a ``DType``.  Both are immutable and compare by value.
"""

from __future__ import annotations

import enum
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import ml_dtypes
import numpy as np


class Kind(enum.IntEnum):
    """Kinds ordered as Triton orders them for scalar promotion."""

    BOOL = 0
    UINT = 1
    INT = 2
    FLOAT = 3


class Predicate(int):
    """A yes/no answer that is also callable, so ``dtype.is_int`` and Triton's ``dtype.is_int()`` agree."""

    def __call__(self) -> bool:
        return bool(self)

    def __repr__(self) -> str:
        return repr(bool(self))

    __str__ = __repr__


YES, NO = Predicate(1), Predicate(0)


def _answer(value: bool) -> bool:
    # Typed as bool: tiles code reads these as properties; only kernels call them.
    return cast(bool, YES if value else NO)


class TritonTypeQueries:
    """Triton's ``dtype`` queries (``is_fp16()``, ``is_int_signed()``, ``scalar``...).

    Kernels inspect types with them (``if x.dtype.is_fp16():``); here they are
    answered from ``name``, ``kind`` and ``bits`` of the scalar types below.
    """

    name: str
    kind: Kind
    bits: int

    def _named(self, *names: str) -> bool:
        return self.name in names

    def is_fp16(self) -> bool: return self._named("float16")
    def is_bf16(self) -> bool: return self._named("bfloat16")
    def is_fp32(self) -> bool: return self._named("float32")
    def is_fp64(self) -> bool: return self._named("float64")
    def is_fp8e4nv(self) -> bool: return self._named("float8e4nv")
    def is_fp8e5(self) -> bool: return self._named("float8e5")
    def is_fp8e4b15(self) -> bool: return self._named("float8e4b15")
    def is_fp8e4b8(self) -> bool: return self._named("float8e4b8")
    def is_fp8e5b16(self) -> bool: return self._named("float8e5b16")
    def is_int1(self) -> bool: return self._named("int1")
    def is_int8(self) -> bool: return self._named("int8")
    def is_int16(self) -> bool: return self._named("int16")
    def is_int32(self) -> bool: return self._named("int32")
    def is_int64(self) -> bool: return self._named("int64")
    def is_uint8(self) -> bool: return self._named("uint8")
    def is_uint16(self) -> bool: return self._named("uint16")
    def is_uint32(self) -> bool: return self._named("uint32")
    def is_uint64(self) -> bool: return self._named("uint64")
    def is_standard_floating(self) -> bool: return self._named("float16", "bfloat16", "float32", "float64")
    def is_void(self) -> bool: return False
    def is_block(self) -> bool: return False
    def is_const(self) -> bool: return False

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        return type_str in BY_NAME

    def is_int_signed(self) -> bool:
        return self.kind is Kind.INT

    def is_int_unsigned(self) -> bool:
        return self.kind is Kind.UINT

    @property
    def scalar(self) -> ScalarType:
        """Triton's ``type.scalar``: a scalar type is its own scalar."""
        return self  # type: ignore[return-value]


class _DTypeMeta(type):
    """``tl.dtype("fp16")`` is ``tl.float16``, as in Triton, where a dtype is built from its name."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], str):
            found = BY_NAME.get(args[0])
            if found is None:
                raise TypeError(f"tl.dtype({args[0]!r}): tiles has no dtype of that name")
            return found
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class DType(TritonTypeQueries, metaclass=_DTypeMeta):
    """A scalar element type (``tl.float32``, ``tl.int8``...): its kind and width in bits."""
    name: str
    kind: Kind
    bits: int
    mantissa: int = 0  # explicit mantissa bits, floats only

    def __eq__(self, other: object) -> bool:  # (the generated one, with a shortcut: dtypes are mostly the same object)
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        o: DType = other  # type: ignore[assignment]
        return (self.name, self.kind, self.bits, self.mantissa) == (o.name, o.kind, o.bits, o.mantissa)

    # Triton's lists of type names (``tl.dtype.SINT_TYPES``...), which its tests parametrize over.
    SINT_TYPES: ClassVar[list[str]] = ["int8", "int16", "int32", "int64"]
    UINT_TYPES: ClassVar[list[str]] = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES: ClassVar[list[str]] = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32",
                                     "fp64"]
    STANDARD_FP_TYPES: ClassVar[list[str]] = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES: ClassVar[list[str]] = ["void"]

    @property
    def np(self) -> np.dtype:
        return _NUMPY[self.name]

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    # The Triton-named queries are callable too: ``is_floating()``.
    @property
    def is_floating(self) -> bool:
        return _answer(self.kind is Kind.FLOAT)

    @property
    def is_int(self) -> bool:
        return _answer(self.kind in (Kind.INT, Kind.UINT, Kind.BOOL))

    @property
    def is_bool(self) -> bool:
        return _answer(self.kind is Kind.BOOL)

    @property
    def is_fp8(self) -> bool:
        return _answer(self.kind is Kind.FLOAT and self.bits == 8)

    @property
    def is_ptr(self) -> bool:
        return _answer(False)

    @property
    def is_signed(self) -> bool:
        return self.kind is Kind.INT

    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    @property
    def int_bitwidth(self) -> int:
        return self.bits if self.is_int else 0

    @property
    def fp_mantissa_width(self) -> int:
        return self.mantissa

    @property
    def exponent_bias(self) -> int:
        """Triton's ``exponent_bias`` of a floating type (7 for float8e4nv; the AMD fnuz formats' is one
        more than the IEEE-style 2**(e-1) - 1; float8e4b15's is 15); other types have none, as in Triton."""
        if self.kind is not Kind.FLOAT:
            raise AttributeError(f"{self.name} has no exponent_bias: not a floating-point type")
        if self.name == "float8e4b15":
            return 15
        exponent_bits = self.bits - 1 - self.mantissa
        return (1 << (exponent_bits - 1)) - 1 + (self.name in ("float8e4b8", "float8e5b16"))

    def get_int_max_value(self) -> int:
        return int(self.max())

    def get_int_min_value(self) -> int:
        return int(self.min())

    def min(self) -> int | float:
        return _limits(self)[0]

    def max(self) -> int | float:
        return _limits(self)[1]

    def __repr__(self) -> str:
        """The expression that names the dtype, as Triton's ``repr(tl.int8)`` is
        ``'triton.language.int8'`` (that spelling in the Triton compatibility mode)."""
        top = sys.modules.get("triton")
        package = "triton" if top is not None and getattr(top, "tiles", None) is not None else "tiles"
        return f"{package}.language.{self.name}"

    def __str__(self) -> str:
        return self.name

    # One object per dtype, as Triton's ``tl.float32``: ``x.dtype is tl.float32`` holds after a
    # copy or a round trip through pickle (the disk cache) too.
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return _by_name, (self.name,)

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> DType:
        return self


def _by_name(name: str) -> DType:
    return BY_NAME[name]


@dataclass(frozen=True)
class PointerType(TritonTypeQueries):
    """The type of a pointer to ``element`` values (``tl.pointer_type(tl.float32)``)."""
    element: DType
    address_space: int = 1

    kind = Kind.UINT
    bits = 64
    itemsize = 8
    primitive_bitwidth = 64

    @property
    def is_ptr(self) -> bool:
        return _answer(True)

    @property
    def is_floating(self) -> bool:
        return _answer(False)

    @property
    def is_int(self) -> bool:
        return _answer(False)

    @property
    def is_bool(self) -> bool:
        return _answer(False)

    @property
    def is_fp8(self) -> bool:
        return _answer(False)

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"ptr<{self.element.name}>"

    @property
    def element_ty(self) -> DType:
        """The pointee type (Triton's ``pointer_type.element_ty``)."""
        return self.element

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


ScalarType = DType | PointerType

int1 = DType("int1", Kind.BOOL, 1)
int8 = DType("int8", Kind.INT, 8)
int16 = DType("int16", Kind.INT, 16)
int32 = DType("int32", Kind.INT, 32)
int64 = DType("int64", Kind.INT, 64)
uint8 = DType("uint8", Kind.UINT, 8)
uint16 = DType("uint16", Kind.UINT, 16)
uint32 = DType("uint32", Kind.UINT, 32)
uint64 = DType("uint64", Kind.UINT, 64)
float8e4nv = DType("float8e4nv", Kind.FLOAT, 8, 3)
float8e5 = DType("float8e5", Kind.FLOAT, 8, 2)
# AMD's "fnuz" fp8 formats (no infinities, no negative zero, NaN is 0x80): e4m3 with bias 8 and
# e5m2 with bias 16, ml_dtypes' float8_e4m3fnuz and float8_e5m2fnuz
float8e4b8 = DType("float8e4b8", Kind.FLOAT, 8, 3)
float8e5b16 = DType("float8e5b16", Kind.FLOAT, 8, 2)
# Triton's float8e4b15: e4m3 with exponent bias 15 and subnormals, every one of the 256 bytes finite
# (no infinity, no NaN; largest 1.875).  No NumPy or ml_dtypes type holds it (core/floats.py codes it)
float8e4b15 = DType("float8e4b15", Kind.FLOAT, 8, 3)
float16 = DType("float16", Kind.FLOAT, 16, 10)
bfloat16 = DType("bfloat16", Kind.FLOAT, 16, 7)
float32 = DType("float32", Kind.FLOAT, 32, 23)
float64 = DType("float64", Kind.FLOAT, 64, 52)

ALL_DTYPES: tuple[DType, ...] = (
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float8e4nv, float8e5, float8e4b8, float8e5b16, float8e4b15, float16, bfloat16, float32, float64,
)
# types only the interpreter runs: the GPU lowerings have no conversions for them
INTERPRETER_ONLY: frozenset[DType] = frozenset({float8e4b8, float8e5b16, float8e4b15})
LOWERED_DTYPES: frozenset[DType] = frozenset(ALL_DTYPES) - INTERPRETER_ONLY
BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
BY_NAME.update({"fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
                "i1": int1, "i8": int8, "i16": int16, "i32": int32, "i64": int64,
                "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64,
                "fp8e4nv": float8e4nv, "fp8e5": float8e5, "fp8e4b8": float8e4b8,
                "fp8e5b16": float8e5b16, "fp8e4b15": float8e4b15, "bool": int1})
# Triton 3.9's other spellings of a type given as a string (its ``type_canonicalisation_dict``:
# signatures such as ``"*float8_e5m2"``, ``"*half"``); it has no ``tl.float8_e5m2`` attribute
BY_NAME.update({"float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5, "float8_e4m3fnuz": float8e4b8,
                "float8_e5m2fnuz": float8e5b16, "half": float16, "float": float32,
                "double": float64, "int": int32, "uint1": int1, "u1": int1})

# float8e4b15's arrays hold its raw bytes as 1-byte void: NumPy refuses arithmetic, ordering and
# conversion to numbers on them, so no code can read the bytes as numbers by mistake; every
# computation decodes them exactly (``floats.e4b15_decode``) and rounds back (``floats.e4b15_encode``)
FP8E4B15_STORAGE = np.dtype((np.void, 1))

_NUMPY: dict[str, np.dtype] = {
    "int1": np.dtype(np.bool_), "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64),
    "float8e4nv": np.dtype(ml_dtypes.float8_e4m3fn), "float8e5": np.dtype(ml_dtypes.float8_e5m2),
    "float8e4b8": np.dtype(ml_dtypes.float8_e4m3fnuz), "float8e5b16": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "float8e4b15": FP8E4B15_STORAGE,
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
}
_FROM_NUMPY: dict[np.dtype, DType] = {v: BY_NAME[k] for k, v in _NUMPY.items()}


def from_numpy(dtype: np.dtype | type) -> DType:
    """The tiles dtype of a NumPy dtype; TypeError when tiles has none."""
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"tiles has no element type for NumPy dtype {dtype!r}") from None


def _limits(d: DType) -> tuple[int | float, int | float]:
    if d.is_bool:
        return 0, 1
    if d.is_int:
        info = np.iinfo(d.np)
        return int(info.min), int(info.max)
    if d.name == "float8e4b15":
        return -1.875, 1.875
    finfo = ml_dtypes.finfo(d.np)
    return float(finfo.min), float(finfo.max)


# ---------------------------------------------------------------- promotion


def integer_promote(a: DType, b: DType) -> DType:
    """C-like promotion of two integer types (Triton's rules)."""
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.kind is Kind.UINT:
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def _literal_rank(d: DType) -> int:
    """Triton's kind order for literals: bool < integer (signed or not) < float."""
    return 0 if d.is_bool else 2 if d.is_floating else 1


def computation_type(a: DType, a_is_literal: bool, b: DType, b_is_literal: bool,
                     div_or_mod: bool = False) -> DType:
    """The type two operands are converted to before a binary arithmetic op.

    A Python literal of a lower-or-equal kind than the tile it meets does not
    widen it (``uint8_tile + 1`` stays uint8).  fp16 beats bf16; bf16 with any
    other float gives fp32; ``/`` and ``%`` on 16-bit floats compute in fp32.
    """
    if a_is_literal != b_is_literal:
        lit, tile = (a, b) if a_is_literal else (b, a)
        if _literal_rank(lit) <= _literal_rank(tile):
            if div_or_mod and tile in (float16, bfloat16):
                return float32
            return tile
    if float64 in (a, b):
        return float64
    if float32 in (a, b):
        return float32
    if float16 in (a, b):
        return float32 if div_or_mod else float16
    if a == bfloat16 and b == bfloat16:
        return float32 if div_or_mod else bfloat16
    if bfloat16 in (a, b):
        return float32
    if a.is_fp8 and b.is_fp8:
        return a if a == b else float16
    if a.is_floating or b.is_floating:
        return a if a.is_floating else b
    if div_or_mod and a.is_signed != b.is_signed:  # int1 counts as unsigned, as in Triton
        raise TypeError(f"Cannot use /, // or % with {a} and {b} because they have different signedness; "
                        "cast one operand first")
    return integer_promote(a, b)


FLOAT32_MIN_NORMAL = 2.0 ** -126
FLOAT32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127


def literal_type(value: bool | int | float) -> DType:
    """The dtype Triton gives a Python number (its ``to_tensor``)."""
    if isinstance(value, bool):
        return int1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if 2**31 <= value < 2**32:
            return uint32
        if -(2**63) <= value < 2**63:
            return int64
        if 2**63 <= value < 2**64:
            return uint64
        raise OverflowError(f"integer literal {value} does not fit in 64 bits")
    if isinstance(value, float):
        # float32 where it holds the number as a normal value (or it is 0, +-inf, NaN); float64 beyond
        size = abs(value)
        if size in (0.0, math.inf) or value != value or FLOAT32_MIN_NORMAL <= size <= FLOAT32_MAX:
            return float32
        return float64
    raise TypeError(f"{value!r} is not a number")
