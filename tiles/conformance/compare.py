"""How a backend's output is compared with the interpreter's, per op.

A ``Rule`` says how close two arrays must be; ``OP_RULES`` gives the rule of each
IR op (README.md explains why each op gets its rule).  Everywhere: NaN matches
NaN (any payload), integers and booleans are compared bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tiles.core.ops import Op

_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype in (
        np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))


def eps_of(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps)


def ordered(a: np.ndarray) -> np.ndarray:
    """Float bit patterns as int64 that order like the numbers (so ULP distance is a difference)."""
    bits = a.view(_UINT_OF_SIZE[a.dtype.itemsize]).astype(np.int64)
    sign = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(bits & sign, -(bits & ~sign), bits)


@dataclass(frozen=True)
class Rule:
    """``kind``: ``exact`` (bits), ``ulp`` (at most ``ulps`` apart), ``tol``
    (``|got - ref| <= rtol * |ref| + atol``, ``atol`` possibly per element), ``sorted``
    (a sort's output: bit-exact except that -0.0 and +0.0, which compare equal, may trade
    places; each row keeps the same values, so as many of each zero), or ``multiset``
    (equal after sorting along the last axis: order of atomics)."""

    kind: str = "exact"
    ulps: int = 0
    rtol: float = 0.0
    atol: float = 0.0
    signed_zero: bool = True  # False: 0.0 and -0.0 count as equal

    def describe(self) -> str:
        if self.kind == "exact":
            return "bit-exact" + ("" if self.signed_zero else " (sign of zero free)")
        if self.kind == "ulp":
            return f"within {self.ulps} ulp"
        if self.kind == "tol":
            return f"|got-ref| <= {self.rtol:.3g}*|ref| + atol"
        if self.kind == "sorted":
            return "bit-exact up to the order of -0.0 and +0.0"
        return "same values in any order"

    def loosest(self, other: Rule) -> Rule:
        """A rule that accepts what either accepts (used for outputs of several ops)."""
        order = ["exact", "sorted", "ulp", "tol", "multiset"]
        if order.index(other.kind) > order.index(self.kind):
            return other.loosest(self)
        if self.kind == other.kind == "ulp":
            return Rule("ulp", self.ulps + other.ulps, signed_zero=self.signed_zero and other.signed_zero)
        if self.kind == "tol" and other.kind == "tol":
            return Rule("tol", rtol=max(self.rtol, other.rtol), atol=max(self.atol, other.atol),
                        signed_zero=False)
        return Rule(self.kind, self.ulps, self.rtol, self.atol,
                    signed_zero=self.signed_zero and other.signed_zero)


EXACT = Rule()
EXACT_ZERO_SIGN_FREE = Rule(signed_zero=False)
MULTISET = Rule("multiset")
SORTED = Rule("sorted", signed_zero=False)


def ulp(n: int) -> Rule:
    return Rule("ulp", n, signed_zero=False)


def tol(rtol: float, atol: float = 0.0) -> Rule:
    return Rule("tol", rtol=rtol, atol=atol, signed_zero=False)


# The rule for one op applied to exact inputs.  Ops missing here are exact.
OP_RULES: dict[Op, Rule] = {
    Op.MAXIMUM: EXACT_ZERO_SIGN_FREE, Op.MINIMUM: EXACT_ZERO_SIGN_FREE,
    Op.MAXIMUM_NAN: EXACT_ZERO_SIGN_FREE, Op.MINIMUM_NAN: EXACT_ZERO_SIGN_FREE,
    Op.DIV: ulp(3), Op.SQRT: ulp(3), Op.RSQRT: ulp(4),
    Op.EXP: ulp(4), Op.EXP2: ulp(4), Op.LOG: ulp(4), Op.LOG2: ulp(4),
    Op.SIN: ulp(4), Op.COS: ulp(4), Op.ERF: ulp(16),
    Op.SORT: SORTED,
}
INEXACT_OPS = frozenset(op for op, r in OP_RULES.items() if r.kind in ("ulp", "tol"))


def rule_for_ops(ops: Iterable[Op]) -> Rule:
    rule = EXACT
    for op in ops:
        rule = rule.loosest(OP_RULES.get(op, EXACT))
    return rule


def sum_bound(x: np.ndarray, axis: int, extra_eps: float = 0.0) -> np.ndarray:
    """Absolute error bound of a float sum in any order: n * eps * sum |x| (per result element)."""
    wide = np.abs(x.astype(np.float64))
    n = x.shape[axis]
    eps = eps_of(x.dtype) + extra_eps
    with np.errstate(all="ignore"):
        return (n * eps) * np.nansum(wide, axis=axis)


# ---------------------------------------------------------------- comparing


@dataclass
class Mismatch:
    rule: Rule
    count: int
    total: int
    examples: list[tuple[tuple[int, ...], object, object]]
    why: str = ""

    def __str__(self) -> str:
        if self.why:
            return self.why
        lines = [f"{self.count} of {self.total} elements differ (rule: {self.rule.describe()})"]
        for idx, r, g in self.examples:
            lines.append(f"  at {idx}: expected {r!r}, got {g!r}")
        return "\n".join(lines)


def _equal_bits(ref: np.ndarray, got: np.ndarray, signed_zero: bool) -> np.ndarray:
    if not is_float(ref):
        return ref == got
    same = ref.view(_UINT_OF_SIZE[ref.dtype.itemsize]) == got.view(_UINT_OF_SIZE[got.dtype.itemsize])
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(r64) & np.isnan(g64)
    if not signed_zero:
        same |= (r64 == 0) & (g64 == 0)
    return same | both_nan


def close(ref: np.ndarray, got: np.ndarray, rule: Rule,
          atol: np.ndarray | float | None = None) -> np.ndarray:
    """Elementwise: does ``got`` satisfy ``rule`` against ``ref``?"""
    ok = _equal_bits(ref, got, rule.signed_zero)
    if rule.kind in ("exact", "sorted") or not is_float(ref):
        return ok
    if rule.kind == "ulp":
        finite = np.isfinite(ref.astype(np.float64)) | np.isfinite(got.astype(np.float64))
        dist = np.abs(ordered(ref) - ordered(got))
        return ok | (finite & (dist <= rule.ulps))
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    with np.errstate(all="ignore"):
        bound = rule.rtol * np.abs(r64) + (rule.atol if atol is None else atol)
        return ok | (np.abs(g64 - r64) <= bound)


def compare(ref: np.ndarray, got: np.ndarray, rule: Rule,
            atol: np.ndarray | float | None = None, limit: int = 5) -> Mismatch | None:
    """None when ``got`` matches ``ref`` under ``rule``, else what differs."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        return Mismatch(rule, ref.size, ref.size, [],
                        f"expected {ref.dtype}{list(ref.shape)}, got {got.dtype}{list(got.shape)}")
    if rule.kind == "multiset":
        ref, got = _sorted(ref), _sorted(got)
        rule = EXACT
    ok = close(ref, got, rule, atol)
    if rule.kind == "sorted" and ref.ndim:  # and the same values: a zero's sign is not free
        ok &= close(_sorted(ref), _sorted(got), EXACT)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    examples = [(tuple(int(i) for i in idx), ref[tuple(idx)], got[tuple(idx)]) for idx in bad[:limit]]
    return Mismatch(rule, int(bad.shape[0]), int(ref.size), examples)


def _sorted(a: np.ndarray) -> np.ndarray:
    """Sorted along the last axis in a total order: -0.0 before +0.0, NaNs (any payload) last."""
    if a.ndim == 0:
        return a
    if not is_float(a):
        return np.sort(a, axis=-1)
    wide = a.astype(np.float64)
    bits = np.where(np.isnan(wide), np.nan, wide).view(np.int64)
    key = np.where(bits < 0, -(bits & np.int64(2**63 - 1)) - 1, bits)
    return np.take_along_axis(a, np.argsort(key, axis=-1, kind="stable"), axis=-1)
