"""FlagGems style stable argsort of each row with one ``tl.sort``: float32 keys bitcast to int32
and made order-preserving (``x ^ ((x >> 31) & 0x7FFFFFFF)``), widened to int64, shifted left 32
and or-ed with the column index, sorted along axis 1 of a [ROWS, N] tile (descending too), and
unpacked with ``& 0xFFFFFFFF`` and ``>> 32``.  Rows include -0.0, +-inf and repeated values."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _order_preserving(x):
    bits = x.to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@tiles.jit
def _argsort_rows(x_ptr, idx_ptr, val_ptr, n_rows, n_cols, ROWS: tl.constexpr, N: tl.constexpr,
                  DESCENDING: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    pad = float("-inf") if DESCENDING else float("inf")
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=pad)
    key = _order_preserving(x).to(tl.int64)
    index = cols[None, :].to(tl.int64)
    if DESCENDING:
        index = N - 1 - index
    packed = (key << 32) | index
    packed = tl.sort(packed, dim=1, descending=DESCENDING)
    index = (packed & 0xFFFFFFFF).to(tl.int32)
    if DESCENDING:
        index = N - 1 - index
    value = (packed >> 32).to(tl.int32)
    value = (value ^ ((value >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
    tl.store(idx_ptr + rows[:, None] * n_cols + cols[None, :], index, mask=mask)
    tl.store(val_ptr + rows[:, None] * n_cols + cols[None, :], value, mask=mask)


def check(rng):
    n_rows, n_cols = 7, 45
    x = rng.integers(-6, 6, (n_rows, n_cols)).astype(np.float32) / 2
    x[0, :6] = [-0.0, 0.0, np.inf, -np.inf, -0.0, 1e-38]
    x[1] = rng.standard_normal(n_cols).astype(np.float32) * 1e30
    for descending in (False, True):
        idx = np.empty((n_rows, n_cols), np.int32)
        val = np.empty((n_rows, n_cols), np.float32)
        _argsort_rows[(tiles.cdiv(n_rows, 4),)](x, idx, val, n_rows, n_cols, ROWS=4, N=64, DESCENDING=descending)
        bits = x.view(np.int32)
        key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
        order = np.argsort(-key.astype(np.int64) if descending else key, axis=1, kind="stable")
        close(idx, order)
        close(val.view(np.int32), np.take_along_axis(x, order, 1).view(np.int32))
