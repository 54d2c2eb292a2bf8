"""Atomic read-modify-write on a typed view, in one sequential order.

``apply(kind, view, idx, values, cmp, used)`` performs ``len(idx)`` atomics in
the order given (the interpreter passes lanes in (program, lane) order) and
returns the old value each one saw, exactly as if they had run one after the
other.  Float adds round after every step, as the hardware does.

* result unused, kind in add/max/min/and/or/xor: one ``ufunc.at`` (sequential).
* no address repeated: one gather, combine, scatter.
* few hot addresses: one ``ufunc.accumulate`` per address (sequential).
* otherwise: rounds by rank, where round r applies the r-th atomic on every
  address at once (addresses within a round are distinct).

max/min on floats use fmax/fmin (a NaN operand loses); xchg and cas compare and
move raw bits (the caller passes unsigned views), so cas compares bit patterns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "max": np.fmax, "min": np.fmin,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def _combine(kind: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    if kind == "xchg":
        return lambda old, v, c: v
    if kind == "cas":
        return lambda old, v, c: np.where(old == c, v, old)
    ufunc = UFUNCS[kind]
    return lambda old, v, c: ufunc(old, v)


def apply(kind: str, view: np.ndarray, idx: np.ndarray, values: np.ndarray,
          cmp: np.ndarray | None, used: bool) -> np.ndarray | None:
    """Apply the atomics; the old values (None when ``used`` is False and not needed)."""
    with np.errstate(all="ignore"):
        return _apply(kind, view, idx, values, cmp, used)


def _apply(kind: str, view: np.ndarray, idx: np.ndarray, values: np.ndarray,
           cmp: np.ndarray | None, used: bool) -> np.ndarray | None:
    if not used and kind in UFUNCS:
        UFUNCS[kind].at(view, idx, values)
        return None
    combine = _combine(kind)
    n = len(idx)
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    first = np.ones(n, np.bool_)
    first[1:] = s[1:] != s[:-1]
    starts = np.flatnonzero(first)
    if len(starts) == n:  # every address once
        old = view[idx]
        view[idx] = combine(old, values, cmp)
        return old
    rank = np.arange(n) - starts[np.cumsum(first) - 1]
    rounds = int(rank.max()) + 1
    old = np.empty(n, view.dtype)
    if kind != "cas" and len(starts) <= rounds:
        bounds = np.append(starts, n)
        for j in range(len(starts)):
            lanes = order[bounds[j]:bounds[j + 1]]
            address = s[bounds[j]]
            seq = np.concatenate((view[address:address + 1], values[lanes].astype(view.dtype)))
            if kind != "xchg":
                seq = UFUNCS[kind].accumulate(seq, dtype=view.dtype)
            old[lanes] = seq[:-1]
            view[address] = seq[-1]
        return old
    by_rank = order[np.argsort(rank, kind="stable")]
    start = 0
    for count in np.bincount(rank):
        lanes = by_rank[start:start + count]
        start += count
        a = idx[lanes]
        o = view[a]
        view[a] = combine(o, values[lanes], None if cmp is None else cmp[lanes])
        old[lanes] = o
    return old
