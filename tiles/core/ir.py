"""The tile IR: typed SSA values, instructions with regions, kernels.

A kernel is a flat list of instructions in a ``Block``; ``FOR``/``WHILE``/``IF``
own nested blocks.  A block's ``args`` are the values it receives (loop index,
carried values) and ``yields`` the values it hands back.  Nothing here knows
about threads or layouts.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field, fields
from typing import Any

from .dtypes import DType, PointerType, ScalarType
from .ops import Op


@dataclass(frozen=True)
class TileType:
    """The type of an IR value: an element dtype and a tile shape (``()`` for a scalar)."""
    dtype: ScalarType
    shape: tuple[int, ...] = ()

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_scalar(self) -> bool:
        return not self.shape

    @property
    def element(self) -> DType:
        """The element dtype (for pointers, the pointee)."""
        d = self.dtype
        return d.element if isinstance(d, PointerType) else d

    def __eq__(self, other: object) -> bool:  # (the generated one, with a shortcut for the same object)
        if self is other:
            return True
        if other.__class__ is not TileType:
            return NotImplemented
        return self.dtype == other.dtype and self.shape == other.shape  # type: ignore[attr-defined, no-any-return]

    def __init__(self, dtype: ScalarType, shape: tuple[int, ...] = ()) -> None:
        # (not the generated one: it sets each field through object.__setattr__, and tracing makes many)
        if not isinstance(shape, tuple):  # tl.block_type(tl.float16, [16, 16])
            shape = tuple(int(s) for s in shape)
        d = self.__dict__
        d["dtype"], d["shape"] = dtype, shape

    # Triton's view of a value's type (``x.type``): a block type for tiles, the
    # scalar type itself for scalars (so ``ptr.type.element_ty`` is the pointee).

    @property
    def element_ty(self) -> ScalarType:
        d = self.dtype
        return d.element if not self.shape and isinstance(d, PointerType) else d

    @property
    def scalar(self) -> ScalarType:
        return self.dtype

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def is_block(self) -> bool:
        return bool(self.shape)

    def is_ptr(self) -> bool:
        return not self.shape and isinstance(self.dtype, PointerType)

    def get_block_shapes(self) -> tuple[int, ...]:
        return self.shape

    def __getattr__(self, name: str) -> Any:
        # A scalar's type answers its dtype's queries (``x.type.is_fp16()``).
        fields = self.__dict__
        dtype = fields.get("dtype")
        if not name.startswith("_") and fields.get("shape") == () and hasattr(type(dtype), name):
            return getattr(dtype, name)
        raise AttributeError(f"tile type has no attribute {name!r}")

    def with_dtype(self, dtype: ScalarType) -> TileType:
        return TileType(dtype, self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> TileType:
        return TileType(self.dtype, tuple(shape))

    def __str__(self) -> str:
        if not self.shape:
            return str(self.dtype)
        return f"<{'x'.join(map(str, self.shape))}x{self.dtype}>"


@dataclass(frozen=True)
class Loc:
    """Where an op came from in the user's kernel."""

    filename: str
    line: int
    function: str = ""
    source: str = ""

    def __str__(self) -> str:
        text = f"{self.filename}:{self.line}"
        if self.function:
            text += f" in {self.function}"
        return text


UNKNOWN_LOC = Loc("<unknown>", 0)
_ids = itertools.count()


class Value:
    """An SSA value; identity is the object itself."""

    __slots__ = ("type", "id", "name")

    def __init__(self, type: TileType, name: str = "") -> None:
        self.type = type
        self.id = next(_ids)
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name or self.id}"


@dataclass(frozen=True, eq=False)
class Instr:
    op: Op
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: Any = None
    regions: tuple[Block, ...] = ()
    loc: Loc = UNKNOWN_LOC

    def __init__(self, op: Op, operands: tuple[Value, ...], results: tuple[Value, ...], attrs: Any = None,
                 regions: tuple[Block, ...] = (), loc: Loc = UNKNOWN_LOC) -> None:
        # (the generated one sets each field through object.__setattr__: a traced kernel makes many)
        d = self.__dict__
        d["op"], d["operands"], d["results"], d["attrs"], d["regions"], d["loc"] = \
            op, operands, results, attrs, regions, loc

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.op
        return self.results[0]


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    instrs: list[Instr] = field(default_factory=list)
    yields: list[Value] = field(default_factory=list)


@dataclass(frozen=True)
class Param:
    """A kernel argument: its value in the body and what the launch promised."""

    name: str
    value: Value
    divisibility: int = 1  # 16 when the launch value (or address) is a multiple of 16


@dataclass(eq=False)
class Kernel:
    name: str
    params: list[Param]
    body: Block
    loc: Loc = UNKNOWN_LOC
    constants: dict[str, Any] = field(default_factory=dict)
    # Values a lowering pass built to guard a hard case (legalize.py), each with the value whose
    # facts (contiguity, divisibility) it has on ordinary inputs: analyses read through them.
    stand_ins: dict[Value, Value] = field(default_factory=dict)

    def walk(self):
        """Every instruction, nested regions included, in program order."""
        return walk_block(self.body)

    def __deepcopy__(self, memo: dict[int, Any]) -> Kernel:
        # ``constants`` are the launch's compile-time values: user objects (a @jit function
        # passed as a tl.constexpr holds a lock) that a copy of the IR shares, never copies.
        memo[id(self.constants)] = self.constants
        twin = Kernel.__new__(Kernel)
        memo[id(self)] = twin
        for f in fields(self):
            setattr(twin, f.name, copy.deepcopy(getattr(self, f.name), memo))
        return twin


def walk_block(block: Block):
    for instr in block.instrs:
        yield instr
        for region in instr.regions:
            yield from walk_block(region)
