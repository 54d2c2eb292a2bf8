"""What the stepping rewrite (``interp/step_rewrite.py``) calls as ``__tiles_step__``: control flow on data.

Each helper gives the value the tracer would have typed, then lets Python decide with the
program's data, so one kernel line runs at a time.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core import dtypes as D
from ..core.builder import current
from ..core.ir import TileType
from ..core.live import LiveValue, live
from . import control
from . import semantic as S
from .tensor import tensor


def _scalar_truth(t: tensor, what: str) -> bool:
    if t.shape:
        raise S.error(f"{what} must be a scalar, got a tile of shape {list(t.shape)}; "
                      "use tl.where for elementwise choices")
    v = live(t.handle)
    if v is None:  # not stepping (a @jit helper called while tracing never gets here)
        raise S.error("internal: a stepping helper ran while tracing")
    return bool(v.session.truth(v))


def cond(c: Any) -> bool:
    """The condition of an ``if`` or ``while``."""
    c = S.unwrap(c)
    if isinstance(c, tensor):
        return _scalar_truth(c, "an if/while condition")
    return bool(c)


def iterate(iterable: Any) -> Any:
    """The values a ``for`` binds: a run-time range's index as the tracer's scalar tile."""
    if isinstance(iterable, control.range):
        return _range(iterable)
    return iterable


def _range(r: control.range) -> Iterator[tensor]:
    lb, ub, step = (S.unwrap(v) for v in (r.start, r.end, r.step))
    if all(isinstance(v, int) for v in (lb, ub, step)) and step == 0:
        raise S.error("range() step must not be zero")
    bounds = [S.to_tensor(v) for v in (lb, ub, step)]
    for b in bounds:
        if not b.dtype.is_int or b.dtype.is_bool or b.shape:
            raise S.error(f"loop bounds must be integer scalars, got {b.type}")
    ity = D.int64 if any(b.dtype.bits == 64 for b in bounds) else D.int32
    lo, hi, st = (int(S.cast(b, ity)) for b in bounds)
    if st == 0:
        raise S.error("for loop with step 0")
    session = current().session  # type: ignore[attr-defined]
    ty = TileType(ity)
    for i in builtins.range(lo, hi, st):
        yield tensor(LiveValue(ty, np.array([i], ity.np), session))


def check(c: Any, message: Callable[[], Any]) -> None:
    """``assert c, message``: every element of ``c`` must be true (checked on the data, always)."""
    c = S.unwrap(c)
    if isinstance(c, tensor):
        v = live(c.handle)
        ok = bool(np.all(v.session.host(v))) if v is not None else True
    else:
        ok = bool(c)
    if not ok:
        raise AssertionError(message())
