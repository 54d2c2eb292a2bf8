"""Pointers loaded from memory: a table of row addresses (int64, as ``data_ptr()`` gives them) turned
back into pointers with ``.to(tl.pointer_type(tl.float32))`` and ``tl.cast``; the rows are separate
arrays that are never passed to the launch themselves."""

import numpy as np
import pytest
from compat_harness import close, refuses_pointers_from_integers

import tiles
import tiles.language as tl
from tiles.core.errors import UnsupportedError


@tiles.jit
def ragged_row_sum_kernel(row_ptrs, row_lens, out_ptr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    addr = tl.load(row_ptrs + r)
    length = tl.load(row_lens + r)
    row = addr.to(tl.pointer_type(tl.float32))
    same_row = tl.cast(addr, tl.pointer_type(tl.float32))
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, length, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(row + offs, mask=offs < length, other=0.0)
    tl.store(out_ptr + r, tl.sum(acc, 0))
    tl.store(same_row, tl.sum(acc, 0))


def check(rng):
    lengths = [5, 70, 33, 1]
    rows = [rng.standard_normal(n).astype(np.float32) for n in lengths]
    originals = [r.copy() for r in rows]
    if tiles.backends.registry.default().name == "cuda":
        import pycuda.autoprimaryctx  # noqa: F401, PLC0415  (pycuda's calls need the primary context current)
        import pycuda.gpuarray as gpuarray  # noqa: PLC0415  (only where CUDA runs)

        held = [gpuarray.to_gpu(r) for r in rows]
        table = np.array([int(h.gpudata) for h in held], np.int64)
    else:
        held = rows
        table = np.array([r.ctypes.data for r in rows], np.int64)
    out = np.empty(len(rows), np.float32)
    if refuses_pointers_from_integers():
        with pytest.raises(UnsupportedError, match="int_to_ptr is not supported on opencl"):
            ragged_row_sum_kernel[(len(rows),)](table, np.array(lengths, np.int32), out, BLOCK=32)
        return
    ragged_row_sum_kernel[(len(rows),)](table, np.array(lengths, np.int32), out, BLOCK=32)
    sums = np.array([o.astype(np.float64).sum() for o in originals])
    close(out, sums, rtol=1e-5, atol=1e-5)
    firsts = [h.get()[0] if hasattr(h, "get") else h[0] for h in held]
    close(np.array(firsts), out, rtol=0, atol=0)
