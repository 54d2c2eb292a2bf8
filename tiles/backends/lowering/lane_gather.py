"""Relayouts through indexed warp shuffles, for tiles small enough that every warp holds a copy.

A tile of at most a warp's worth of single-element chunks (a row or column vector of a 2-D tile:
``x[:, None]``, ``b[None, :]``) is replicated across the program: thread ``t`` holds chunk
``t % nchunks``, so where ``nchunks`` divides the warp size, lane ``c`` of every warp holds element
``c``.  A thread that needs element ``i`` of it then reads lane ``i`` of its own warp with one
shuffle, instead of a trip through local memory between two barriers.  Elsewhere (larger tiles,
targets without an indexed shuffle, pointer tiles) ``gather_lanes`` declines and the relayout uses
local memory.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.dtypes import PointerType
from ...core.ir import Value
from .emitter import Handle
from .layout import Layout
from .lower import Index, Lowering


def fits_lanes(lw: Lowering, src: Value) -> bool:
    """Whether lane ``c`` of every warp holds element ``c`` of ``src``, all of it (module doc)."""
    lay, warp = lw.layout(src), lw.e.target.warp_size
    return (lay.vec == 1 and lay.rounds == 1 and warp % lay.nchunks == 0 and lw.threads % warp == 0
            and not isinstance(src.type.dtype, PointerType))


def gather_lanes(lw: Lowering, src: Value, dst: Layout, source_index: Callable[[int, Index], Index],
                 one_per_chunk: bool = False) -> list[Handle] | None:
    """Result slot j of ``dst`` holds element source_index(j, its row-major index) of ``src``, read
    from the lane holding it; None where ``src``'s layout or the target does not allow (module doc).
    ``one_per_chunk``: the slots of a chunk of ``dst`` all read one element (a broadcast along the
    last axis), shuffled once."""
    if not fits_lanes(lw, src):
        return None
    value, dtype = lw.env[src][0], src.type.dtype
    out: list[Handle] = []
    for j in range(dst.per_thread):
        if one_per_chunk and dst.slot(j)[1]:
            out.append(out[-1])
            continue
        moved = lw.e.shuffle_index(value, lw.idx(source_index(j, lw.flat_index(dst, j))), dtype)
        if moved is None:
            return None
        out.append(moved)
    return out
