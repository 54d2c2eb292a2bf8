"""Launch checks shared by every backend: one rule, one message, the kernel's file:line.

The jit layer runs these before any backend sees the launch, so the interpreter,
OpenCL, CUDA and ROCm refuse the same bad input with the same words.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..backends.base import Target
from ..core.errors import LaunchError
from ..core.ir import Loc

MAX_GRID_SIZE = 2**31 - 1  # Triton's launchers read each size as a C int
MAX_THREADS_PER_PROGRAM = 1024  # what a CUDA block / ROCm workgroup may hold; the interpreter follows it


def normalize_grid(grid: Any, where: Loc, name: str) -> tuple[int, int, int]:
    """Triton's rule: the first three sizes of a non-empty sequence of ints (missing ones are 1).

    Sizes must be ints (NumPy ints are fine, floats and bools are not) and >= 0; a zero
    size launches nothing.  Sizes past the third are ignored, as Triton's compiled launcher does.
    """
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        grid = (grid,)
    if not isinstance(grid, Iterable) or isinstance(grid, (str, bytes)):
        raise LaunchError(f"{where}: {name}: the grid must be a tuple of ints or a function of the "
                          f"meta-parameters returning one, got {grid!r}; write {name}[(n,)](...)")
    sizes = tuple(grid)
    if not sizes:
        raise LaunchError(f"{where}: {name}: the grid is empty; give at least one size, e.g. (1,)")
    dims = [_grid_size(s, i, sizes, where, name) for i, s in enumerate(sizes[:3])]
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def quick_grid(grid: Any) -> tuple[int, int, int] | None:
    """``normalize_grid``'s answer for a tuple of one to three positive ints (the usual grid),
    without its checks; None for anything else (``normalize_grid`` then decides)."""
    if type(grid) is not tuple:
        return None
    n = len(grid)
    if n == 1:
        a = grid[0]
        return (a, 1, 1) if type(a) is int and 0 < a <= MAX_GRID_SIZE else None
    if n == 2:
        a, b = grid
        ok = type(a) is int and type(b) is int and 0 < a <= MAX_GRID_SIZE and 0 < b <= MAX_GRID_SIZE
        return (a, b, 1) if ok else None
    if n == 3:
        a, b, c = grid
        ok = (type(a) is int and type(b) is int and type(c) is int and 0 < a <= MAX_GRID_SIZE
              and 0 < b <= MAX_GRID_SIZE and 0 < c <= MAX_GRID_SIZE)
        return grid if ok else None  # type: ignore[return-value]
    return None


def _grid_size(size: Any, axis: int, sizes: tuple[Any, ...], where: Loc, name: str) -> int:
    if isinstance(size, (bool, np.bool_)):
        value = None
    else:
        try:
            value = operator.index(size)
        except TypeError:
            value = None
    if value is None:
        fix = "use triton.cdiv(n, BLOCK) or int(...)" if isinstance(size, (float, np.floating)) else "pass an int"
        raise LaunchError(f"{where}: {name}: grid size {axis} must be an int, got {size!r} "
                          f"({type(size).__name__}) in grid {sizes!r}; {fix}")
    if not 0 <= value <= MAX_GRID_SIZE:
        raise LaunchError(f"{where}: {name}: grid size {axis} must be between 0 and {MAX_GRID_SIZE}, "
                          f"got {value} in grid {sizes!r}")
    return value


def max_num_warps(target: Target) -> int:
    """The most warps one program may have on ``target`` (32-lane warps where the target has none)."""
    threads = MAX_THREADS_PER_PROGRAM if target.warp_size <= 1 else target.max_threads_per_block
    return max(1, threads // max(target.warp_size, 32))


def check_num_warps(num_warps: Any, target: Target, where: Loc, name: str) -> int:
    """``num_warps`` is a power of two no larger than what one program may hold on ``target``."""
    limit = max_num_warps(target)
    try:
        value = operator.index(num_warps)
    except TypeError:
        value = -1
    if isinstance(num_warps, bool) or value < 1 or value & (value - 1) or value > limit:
        raise LaunchError(f"{where}: {name}: num_warps must be a power of two from 1 to {limit} on "
                          f"{target.backend}, got {num_warps!r}; use e.g. num_warps=4")
    return value


def check_positive_int(option: str, value: Any, where: Loc, name: str, minimum: int = 1) -> int:
    """``value`` as an int, when it is one and at least ``minimum``."""
    try:
        number = -1 if isinstance(value, bool) else operator.index(value)
    except TypeError:
        number = minimum - 1
    if number < minimum:
        raise LaunchError(f"{where}: {name}: {option} must be an int >= {minimum}, got {value!r}")
    return number


def check_writable(values: dict[str, Any], stores: dict[str, Loc], where: Loc, name: str) -> None:
    """Refuse a read-only NumPy array passed where the kernel stores (naming the store's line)."""
    for param, store_loc in stores.items():
        value = values.get(param)
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            raise LaunchError(f"{where}: {name}: argument {param!r} is a read-only NumPy array, but the "
                              f"kernel writes through it at {store_loc}; pass a writable array "
                              f"(e.g. {param}.copy())")
