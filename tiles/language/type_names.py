"""Triton's type objects for signatures: ``tl.str_to_ty`` reads a type string (``"*fp32"``,
``"i32"``, ``"constexpr"``, ``"tensordesc<fp16[16, 32]>"``, tuples of them) into a type;
``tl.tuple_type`` and ``tl.tensor_descriptor_type`` are the types of tuples and descriptors.

In tiles tuples are Python tuples and descriptors trace-time objects, so these types are
descriptions (equality, fields, printing) for host code that builds or inspects signatures; the
IR never holds them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..core import dtypes as D
from ..core.dtypes import PointerType
from ..core.ir import TileType
from .core import constexpr_type


class tuple_type:  # noqa: N801
    """The type of a tuple: its element types and, for a namedtuple, its field names."""

    def __init__(self, types: Sequence[Any], fields: Sequence[str] | None = None) -> None:
        self.types = list(types)
        self.fields = None if fields is None else list(fields)

    @property
    def name(self) -> str:
        if self.fields is None:
            return "[" + ",".join(str(t) for t in self.types) + "]"
        return "[" + ",".join(f"{k}:{t}" for k, t in zip(self.fields, self.types)) + "]"

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __iter__(self) -> Iterator[Any]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, index: int) -> Any:
        return self.types[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tuple_type) and self.types == other.types and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((tuple(self.types), None if self.fields is None else tuple(self.fields)))


class tensor_descriptor_type:  # noqa: N801
    """The type of a tensor descriptor: its block type and the types of its shape and strides."""

    def __init__(self, block_type: TileType, shape_type: tuple_type, strides_type: tuple_type) -> None:
        self.block_type, self.shape_type, self.strides_type = block_type, shape_type, strides_type

    @property
    def block_shape(self) -> list[int]:
        return list(self.block_type.shape)

    def __str__(self) -> str:
        return f"tensor_descriptor<{self.block_type}>"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, tensor_descriptor_type) and self.block_type == other.block_type
                and self.shape_type == other.shape_type and self.strides_type == other.strides_type)

    def __hash__(self) -> int:
        return hash((self.block_type, self.shape_type, self.strides_type))


_DESCRIPTOR = re.compile(r"tensordesc<\s*(\w+)\s*\[([\d,\s]+)\]\s*>$")


def str_to_ty(name: Any, c: Any = None) -> Any:
    """The type a signature string names: ``"*fp32"`` (``"*k..."``: read-only, the same pointer
    type in tiles), ``"i32"``, ``"constexpr"`` (of value ``c``), ``"tensordesc<fp16[16, 32]>"``,
    or a tuple of these (a ``tuple_type``)."""
    if isinstance(name, tuple):
        fields = type(name).__dict__.get("_fields")
        return tuple_type([str_to_ty(x, c) for x in name], fields)
    if not isinstance(name, str) or not name:
        raise TypeError(f"str_to_ty: expected a type string, got {name!r}")
    if name.startswith("*"):
        inner = name[1:]
        if inner.startswith("k"):
            inner = inner[1:]
        return PointerType(str_to_ty(inner, c))
    if name.startswith("constexpr"):
        return constexpr_type(c)
    if name.startswith("tensordesc"):
        match = _DESCRIPTOR.match(name)
        if match is None:
            raise TypeError(f"str_to_ty: tiles reads descriptor types such as 'tensordesc<fp16[16, 32]>' "
                            f"(no layouts), got {name!r}")
        block = [int(s) for s in match.group(2).split(",") if s.strip()]
        ndim = len(block)
        return tensor_descriptor_type(TileType(str_to_ty(match.group(1)), tuple(block)),
                                      tuple_type([D.int32] * ndim), tuple_type([D.int64] * ndim))
    found = D.BY_NAME.get(name)
    if found is None:
        raise TypeError(f"str_to_ty: tiles has no type named {name!r}")
    return found
