"""Curated outputs start as a sentinel when, and only when, the kernel only stores to them."""

from __future__ import annotations

import numpy as np

from tiles.conformance.corpus import classic, reductions, sync
from tiles.conformance.profiles import CI
from tiles.conformance.sentinel import SENTINEL_BYTE


def _case(module, name):
    return next(c for c in module.cases(CI) if c.name.startswith(name))


def _is_sentinel(a: np.ndarray) -> bool:
    return bool((np.ascontiguousarray(a).reshape(-1).view(np.uint8) == SENTINEL_BYTE).all())


def test_store_only_outputs_start_as_the_sentinel():
    args = _case(classic, "masked_vector_tail[int32").args()
    assert _is_sentinel(args[1]) and not _is_sentinel(args[0])


def test_buffers_the_kernel_reads_keep_their_zeros():
    lock = _case(sync, "spin_lock_accumulate").args()  # DW is read under the lock, Lock/Tally updated
    assert not lock[2].any() and not lock[3].any()
    split = _case(sync, "split_k_atomic_add").args()  # C is updated atomically: its start matters
    assert not _is_sentinel(split[2])


def test_a_zero_dimensional_output_is_filled_too():
    c = next(c for c in reductions.cases(CI) if "axis=None" in c.name)
    args = c.args()
    assert any(isinstance(a, np.ndarray) and _is_sentinel(a) for i, a in enumerate(args) if i in c.outputs)
