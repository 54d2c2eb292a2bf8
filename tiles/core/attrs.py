"""Typed attribute records of the IR ops (one small frozen record per need)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dtypes import DType, ScalarType
from .kinds import AtomicKind, ReduceKind
from .ops import Op


@dataclass(frozen=True)
class Const:
    """CONST: the value splatted over the result (a Python bool, int or float)."""

    value: bool | int | float
    dtype: DType
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class Arange:
    start: int
    end: int


@dataclass(frozen=True)
class Axis:
    """PROGRAM_ID / NUM_PROGRAMS: the grid axis (0, 1 or 2)."""

    axis: int


@dataclass(frozen=True)
class Cast:
    """CAST / BITCAST / INT_TO_PTR: the target element type."""

    dtype: ScalarType
    fp_downcast_rounding: str = "rtne"


@dataclass(frozen=True)
class Division:
    """DIV: ``approximate`` lets a backend round within the bound it declares (``Target.approximate``),
    as Triton's ``/`` does on NVIDIA GPUs (``div.full.f32``); without it the quotient is IEEE's."""

    approximate: bool = False


@dataclass(frozen=True)
class MathFn:
    """MATH_FN: the function's name, a key of ``core.mathfns.FUNCTIONS``."""

    name: str


@dataclass(frozen=True)
class Hint:
    """HINT: ``kind`` is ``multiple_of`` or ``max_contiguous``; one value per axis."""

    kind: str
    values: tuple[int, ...]


@dataclass(frozen=True)
class Shape:
    """BROADCAST / RESHAPE: the result shape."""

    shape: tuple[int, ...]


@dataclass(frozen=True)
class Permute:
    order: tuple[int, ...]


@dataclass(frozen=True)
class Reduce:
    """REDUCE / SCAN: ``kind`` combines (``custom``: the op's region does, args (a0.., b0..)
    -> yields (r0..)); a name is accepted and stored as its ``ReduceKind``."""

    axis: int
    kind: ReduceKind
    reverse: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ReduceKind(self.kind))


@dataclass(frozen=True)
class ArgReduce:
    axis: int
    kind: ReduceKind  # MAX or MIN

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ReduceKind(self.kind))
        if self.kind not in (ReduceKind.MAX, ReduceKind.MIN):
            raise ValueError(f"argreduce kind must be max or min, got {self.kind}")


@dataclass(frozen=True)
class Sort:
    descending: bool


@dataclass(frozen=True)
class Histogram:
    bins: int


@dataclass(frozen=True)
class Gather:
    axis: int


@dataclass(frozen=True)
class Dot:
    """DOT: operands (a, b, acc); ``input_precision`` is tf32, tf32x3 or ieee."""

    input_precision: str = "ieee"
    max_num_imprecise_acc: int | None = None


@dataclass(frozen=True)
class Load:
    """LOAD operands: (ptr, [mask], [other])."""

    masked: bool
    has_other: bool
    cache_modifier: str = ""
    eviction_policy: str = ""
    volatile: bool = False


@dataclass(frozen=True)
class Store:
    """STORE operands: (ptr, value, [mask])."""

    masked: bool
    cache_modifier: str = ""
    eviction_policy: str = ""


@dataclass(frozen=True)
class Atomic:
    """ATOMIC operands: (ptr, value, [mask]); ATOMIC_CAS: (ptr, cmp, value)."""

    kind: AtomicKind  # a name is accepted and stored as its AtomicKind
    masked: bool
    sem: str = "acq_rel"
    scope: str = "gpu"
    result_used: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", AtomicKind(self.kind))


@dataclass(frozen=True)
class Descriptor:
    """DESC_LOAD / DESC_STORE: the tile's ``block_shape``; operands are (base, shape x n, strides x n,
    offsets x n[, value]) with n = len(block_shape), shape and strides int64, offsets int32.
    ``bounded`` names the axes masked by ``shape`` (None: every axis, a tensor descriptor; a block
    pointer's ``boundary_check`` otherwise).  ``rebased`` is the CUDA lowering's alone
    (``cuda/hopper/tma_rebase.py``): the host-side sources of the terms the base's offset from its
    parameter is a multiple of; empty in traced IR."""

    block_shape: tuple[int, ...]
    bounded: tuple[bool, ...] | None = None
    rebased: tuple[Any, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.block_shape)

    def is_bounded(self, axis: int) -> bool:
        return self.bounded is None or self.bounded[axis]


@dataclass(frozen=True)
class Message:
    """DEVICE_ASSERT / DEVICE_PRINT text."""

    text: str
    hex: bool = False


@dataclass(frozen=True)
class Loop:
    """FOR: ``tl.range``'s scheduling options; none of them changes what the loop computes."""

    num_stages: int | None = None  # software-pipelining depth for this loop (overrides the launch's)
    loop_unroll_factor: int | None = None
    disallow_acc_multi_buffer: bool = False
    flatten: bool = False
    warp_specialize: bool = False
    disable_licm: bool = False


_NONE = type(None)
ATTRS_OF: dict[Op, tuple[type, ...]] = {
    Op.CONST: (Const,), Op.ARANGE: (Arange,), Op.PROGRAM_ID: (Axis,), Op.NUM_PROGRAMS: (Axis,),
    Op.DIV: (Division, _NONE), Op.CAST: (Cast,), Op.BITCAST: (Cast,), Op.INT_TO_PTR: (Cast,), Op.MATH_FN: (MathFn,),
    Op.HINT: (Hint,), Op.BROADCAST: (Shape,), Op.RESHAPE: (Shape,), Op.PERMUTE: (Permute,),
    Op.REDUCE: (Reduce,), Op.SCAN: (Reduce,), Op.ARGREDUCE: (ArgReduce,), Op.SORT: (Sort,),
    Op.HISTOGRAM: (Histogram,), Op.GATHER: (Gather,), Op.DOT: (Dot,), Op.LOAD: (Load,),
    Op.STORE: (Store,), Op.ATOMIC: (Atomic,), Op.ATOMIC_CAS: (Atomic,),
    Op.DESC_LOAD: (Descriptor,), Op.DESC_STORE: (Descriptor,),
    Op.DEVICE_ASSERT: (Message, _NONE), Op.DEVICE_PRINT: (Message, _NONE), Op.FOR: (Loop, _NONE),
}
"""The attribute record each op carries (the verifier checks it); an op not listed carries None."""
