"""The set of programs that one batched execution step serves.

Every interpreter value has a leading program axis of length ``P`` (one row per
program of the set, in launch order) or 1 (the same for every program).
"""

from __future__ import annotations

import numpy as np


def uniform_or(v: np.ndarray) -> np.ndarray:
    """``v[:1]`` when every row of ``v`` is equal, else ``v``."""
    if v.shape[0] > 1 and bool((v == v[:1]).all()):
        return v[:1]
    return v


_ZERO = np.zeros(1, np.int32)
_ZERO.flags.writeable = False  # shared by every launch


class Programs:
    """Programs by linear id (x fastest, then y, then z), in increasing order."""

    __slots__ = ("linear", "grid", "P", "ids")

    def __init__(self, linear: np.ndarray, grid: tuple[int, int, int]) -> None:
        self.linear = linear
        self.grid = grid
        self.P = len(linear)
        gx, gy, gz = grid
        if gy == 1 and gz == 1:  # a 1-D grid (most launches): x is the linear id, y and z are 0
            self.ids: tuple[np.ndarray, ...] = (uniform_or(linear.astype(np.int32)), _ZERO, _ZERO)
            return
        x = linear % gx
        y = (linear // gx) % gy
        z = linear // (gx * gy)
        self.ids = tuple(uniform_or(v.astype(np.int32)) for v in (x, y, z))

    @classmethod
    def range(cls, start: int, stop: int, grid: tuple[int, int, int]) -> Programs:
        return cls(np.arange(start, stop, dtype=np.int64), grid)

    def subset(self, index: np.ndarray) -> Programs:
        return Programs(self.linear[index], self.grid)

    def pid(self, i: int) -> tuple[int, int, int]:
        """(x, y, z) of the i-th program of the set."""
        lin = int(self.linear[i])
        gx, gy, _ = self.grid
        return lin % gx, (lin // gx) % gy, lin // (gx * gy)

    def describe(self, i: int) -> str:
        x, y, z = self.pid(i)
        return f"program ({x}, {y}, {z})"
