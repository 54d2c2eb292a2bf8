"""Blocked layouts: which thread of a program holds which element of a tile.

A tile's elements, in row-major order, are cut into *chunks* of ``vec``
consecutive elements (``vec`` divides the last dimension, so a chunk never
crosses a row).  Chunk ``c`` goes to thread ``c % threads``; a tile with more
chunks than threads wraps around, so thread ``t`` holds chunks ``t``,
``t + threads``, ... (one *round* each).  Consecutive threads therefore touch
consecutive ``vec``-element runs: a warp reads whole cache lines, and a chunk of
16 bytes becomes one vector access.

When a round has fewer chunks than threads, the surplus threads hold copies of
existing chunks (chunk ``c % nchunks``): every thread has a value for every slot,
but only the *owner* (the thread with ``round * threads + t < nchunks``) may
store it or apply its atomic.  A scalar is a tile of one element that every
thread holds; thread 0 owns it.

The layout depends on the shape only, so tiles of one shape (whatever their
dtype) always agree and elementwise ops never move data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

VECTOR_ELEMENTS = 4  # 16 bytes of fp32: one vector load/store per chunk


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    vec: int
    threads: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nchunks(self) -> int:
        return self.numel // self.vec

    @property
    def rounds(self) -> int:
        return -(-self.nchunks // self.threads)

    @property
    def per_thread(self) -> int:
        """Elements each thread holds (slots)."""
        return self.rounds * self.vec

    def round_is_full(self, r: int) -> bool:
        """Every thread owns its chunk of round ``r`` (no copies, no modulo)."""
        return (r + 1) * self.threads <= self.nchunks

    @property
    def exact(self) -> bool:
        """No element is held by two threads."""
        return self.nchunks % self.threads == 0

    def slot(self, j: int) -> tuple[int, int]:
        """(round, position inside the chunk) of slot ``j``."""
        return divmod(j, self.vec)


def choose_layout(shape: tuple[int, ...], threads: int, max_vec: int = VECTOR_ELEMENTS) -> Layout:
    """The layout of every tile of ``shape`` in a program of ``threads`` threads.

    ``max_vec`` is the widest chunk: 16 bytes of the narrowest element type the kernel
    moves through memory (4 for fp32 kernels, 8 when fp16/bf16 data is loaded or stored).
    """
    if not shape:
        return Layout((), 1, threads)
    numel = math.prod(shape)
    vec = max_vec
    while vec > 1 and (shape[-1] % vec or numel // vec < threads):
        vec //= 2
    return Layout(tuple(shape), vec, threads)


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))
