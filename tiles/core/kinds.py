"""The kinds of REDUCE/SCAN/ARGREDUCE combines and of atomics, as enums.

They are ``StrEnum``s, so ``ReduceKind.MAX == "max"``: a kind reads and prints as the
name ``tl`` uses.  ``.op`` is the elementwise op that combines two values of that kind,
the one place the kind -> op mapping is written.
"""

from __future__ import annotations

import enum

from .ops import Op


class ReduceKind(enum.StrEnum):
    SUM = "sum"
    PROD = "prod"
    MAX = "max"  # NaN loses (fmax)
    MIN = "min"
    MAX_NAN = "max_nan"  # NaN propagates
    MIN_NAN = "min_nan"
    XOR = "xor"
    AND = "and"
    OR = "or"
    CUSTOM = "custom"  # the op's region combines

    @property
    def op(self) -> Op:
        """The elementwise combine (CUSTOM has none: its region is the combine)."""
        if self is ReduceKind.CUSTOM:
            raise ValueError("a custom reduction combines with its region, not with one op")
        return _REDUCE_OPS[self]


class AtomicKind(enum.StrEnum):
    ADD = "add"
    MAX = "max"  # floats: NaN loses
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"
    XCHG = "xchg"  # *p = value
    CAS = "cas"  # ATOMIC_CAS only

    @property
    def op(self) -> Op | None:
        """The elementwise op computing the new value from (old, value); None for xchg/cas."""
        return _ATOMIC_OPS.get(self)


_REDUCE_OPS = {
    ReduceKind.SUM: Op.ADD, ReduceKind.PROD: Op.MUL, ReduceKind.MAX: Op.MAXIMUM,
    ReduceKind.MIN: Op.MINIMUM, ReduceKind.MAX_NAN: Op.MAXIMUM_NAN, ReduceKind.MIN_NAN: Op.MINIMUM_NAN,
    ReduceKind.XOR: Op.XOR, ReduceKind.AND: Op.AND, ReduceKind.OR: Op.OR,
}
_ATOMIC_OPS = {
    AtomicKind.ADD: Op.ADD, AtomicKind.MAX: Op.MAXIMUM, AtomicKind.MIN: Op.MINIMUM,
    AtomicKind.AND: Op.AND, AtomicKind.OR: Op.OR, AtomicKind.XOR: Op.XOR,
}
