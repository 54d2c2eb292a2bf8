"""Functions Triton also offers as ``tensor`` methods (``x.sum(0)``, ``p.load()``...), registered in
``tensor.METHODS`` when the package imports this module."""

from __future__ import annotations

from typing import Any

from . import core, memory, reduction, standard
from . import semantic as S
from .tensor import METHODS

METHODS.update({
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
    "atomic_and": memory.atomic_and, "atomic_or": memory.atomic_or, "atomic_xor": memory.atomic_xor,
    "atomic_xchg": memory.atomic_xchg, "atomic_cas": memory.atomic_cas,
    "atomic_poll": memory.atomic_poll,
    "atomic_load": memory.atomic_load, "atomic_store": memory.atomic_store, "advance": memory.advance,
    "cdiv": core.cdiv, "flip": standard.flip, "reduce_or": standard.reduce_or,
})


def _item(x: Any) -> Any:
    """The single element of a one-element tile, as a scalar."""
    t = S.to_tensor(x)
    if t.numel != 1:
        raise S.error(f".item() needs a tile with one element, got shape {list(t.shape)}")
    return S.reshape(t, ())


METHODS["item"] = _item
