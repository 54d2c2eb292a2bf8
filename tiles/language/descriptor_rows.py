"""Row gathers and scatters through a tensor descriptor: ``desc.gather(rows, col)`` and
``desc.scatter(value, rows, col)`` (Triton's Blackwell TMA gather/scatter).

A 2D descriptor whose block is one row, ``[1, N]``, reads (or writes) the ``N`` columns from
``col`` of each row that the 1D int16/int32 tile ``rows`` names: an ``[R, N]`` tile, row ``i``
from tensor row ``rows[i]``.  As the descriptor's loads and stores, elements outside the
tensor's shape read 0 and are not written.  They are traced as masked pointer loads and stores,
so every backend runs them; Triton's size rules (at least 8 rows, at least 32 bytes of
columns) are kept so that a kernel tiles accepts also compiles with Triton.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import dtypes as D
from . import semantic as S
from .core import arange
from .tensor import tensor

if TYPE_CHECKING:
    from .memory import tensor_descriptor


def _checked(desc: tensor_descriptor, rows: Any, what: str) -> tensor:
    """``rows`` as a tile after Triton's checks on the descriptor and the row offsets."""
    bs = tuple(desc.block_shape)
    if len(bs) != 2:
        raise S.error(f"descriptor {what} needs a 2D descriptor, but its block shape is {list(bs)}")
    if bs[0] != 1:
        raise S.error(f"descriptor {what}: the descriptor's block must have 1 row, but got {list(bs)}")
    x = S.to_tensor(rows)
    if len(x.shape) != 1:
        raise S.error(f"descriptor {what}: the row offsets must be a 1D tile, but got shape {list(x.shape)}")
    if x.dtype not in (D.int16, D.int32):
        raise S.error(f"descriptor {what}: the row offsets must be int16 or int32, but got {x.dtype}")
    if x.shape[0] < 8:
        raise S.error(f"descriptor {what} must have at least 8 rows, but got {list(x.shape)}")
    min_cols = 32 // desc.dtype.bits * 8
    if bs[1] < min_cols:
        raise S.error(f"descriptor {what} of {desc.dtype} must have at least {min_cols} columns, but got {bs[1]}")
    return x


def _addresses(desc: tensor_descriptor, x: tensor, col: Any) -> tuple[tensor, tensor]:
    """The element offsets of the ``[R, N]`` tile and its in-bounds mask."""
    n = desc.block_shape[1]
    r = S.reshape(x, (x.shape[0], 1))
    c = S.reshape(S.add(arange(0, n), S.cast(col, D.int32) if isinstance(col, tensor) else S.unwrap(col)), (1, n))
    offs = S.add(S.mul(S.cast(r, D.int64), desc.strides[0]), S.mul(S.cast(c, D.int64), desc.strides[1]))
    row_ok = S.bitwise("and", S.compare("ge", r, 0), S.compare("lt", r, desc.shape[0]))
    col_ok = S.bitwise("and", S.compare("ge", c, 0), S.compare("lt", c, desc.shape[1]))
    shape = (x.shape[0], n)
    return S.broadcast_to(offs, shape), S.broadcast_to(S.bitwise("and", row_ok, col_ok), shape)


def gather(desc: tensor_descriptor, rows: Any, col: Any) -> tensor:
    """The ``[len(rows), N]`` tile of rows ``rows`` and columns ``col .. col + N``; outside reads 0."""
    from .memory import load
    x = _checked(desc, rows, "gather")
    offs, mask = _addresses(desc, x, col)
    return load(S.add(desc.base, offs), mask=mask, other=0)


def scatter(desc: tensor_descriptor, value: Any, rows: Any, col: Any) -> None:
    """Write row ``i`` of ``value`` to row ``rows[i]``, columns ``col .. col + N``; outside is dropped."""
    from .memory import store
    x = _checked(desc, rows, "scatter")
    offs, mask = _addresses(desc, x, col)
    shape = (x.shape[0], desc.block_shape[1])
    v = S.to_tensor(value) if isinstance(value, tensor) else S.const(S.unwrap(value), desc.dtype)
    if S.broadcast_shapes(shape, v.shape) != shape:
        raise S.error(f"descriptor scatter: value of shape {list(v.shape)} does not fit {list(shape)}")
    store(S.add(desc.base, offs), S.cast(v, desc.dtype), mask=mask)
