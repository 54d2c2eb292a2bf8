"""Functions Triton also offers as ``tensor`` methods (``x.sum(0)``, ``p.load()``...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import core, memory, reduction

METHODS: dict[str, Callable[..., Any]] = {
    "sum": reduction.sum, "max": reduction.max, "min": reduction.min, "argmax": reduction.argmax,
    "argmin": reduction.argmin, "xor_sum": reduction.xor_sum, "reduce": reduction.reduce,
    "cumsum": reduction.cumsum, "cumprod": reduction.cumprod, "sort": reduction.sort,
    "associative_scan": reduction.associative_scan, "histogram": reduction.histogram,
    "gather": reduction.gather, "softmax": reduction.softmax,
    "exp": core.exp, "exp2": core.exp2, "log": core.log, "log2": core.log2, "sqrt": core.sqrt,
    "rsqrt": core.rsqrt, "sin": core.sin, "cos": core.cos, "erf": core.erf, "floor": core.floor,
    "ceil": core.ceil, "abs": core.abs, "sigmoid": core.sigmoid, "cast": core.cast,
    "ravel": core.ravel, "join": core.join,
    "load": memory.load, "store": memory.store, "atomic_add": memory.atomic_add,
    "atomic_max": memory.atomic_max, "atomic_min": memory.atomic_min,
}
