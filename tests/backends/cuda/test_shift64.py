"""64-bit shifts by run-time amounts on CUDA: NVPTX folds legalize's range guard into its own
shift, which clamps amounts >= 64 but reads only the amount's low 32 bits, so an amount such as
2**63 shifted by 0 on the H200 (found by conformance's guards family).  The amount is clamped to
64 before it reaches the shift; PTX everywhere, numerics on a GPU."""

import re

import numpy as np
import pytest
from test_examples_ptx import CompileOnlyCUDA

import tiles
import tiles.language as tl
from tiles.backends import registry

GPU, WHY = registry.status("cuda")


@tiles.jit
def shifts(x_ptr, a_ptr, shl_ptr, shr_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, a = tl.load(x_ptr + offs), tl.load(a_ptr + offs)
    tl.store(shl_ptr + offs, x << a)
    tl.store(shr_ptr + offs, x >> a)


def _inputs(dtype):
    r = np.random.default_rng(3)
    info = np.iinfo(dtype)
    x = r.integers(info.min, info.max, 256, dtype=dtype, endpoint=True)
    amounts = [0, 1, 63, 64, 65, 128, 2**32, 2**32 + 1, 2**40, info.max]
    if info.min < 0:
        amounts += [-1, -64, info.min, -(2**32)]
    a = np.resize(np.array(amounts, dtype), 256)
    return x, a


@pytest.mark.parametrize("dtype", [np.int64, np.uint64], ids=str)
def test_amount_reaching_the_shift_is_clamped(dtype):
    x, a = _inputs(dtype)
    ptx = shifts.warmup(x, a, x, x, BLOCK=256, backend=CompileOnlyCUDA()).asm["ptx"]
    clamped = set(re.findall(r"min\.u64\s+(%rd\d+), %rd\d+, 64;", ptx))
    clamped |= {r for r, a in re.findall(r"selp\.b64\s+(%rd\d+), (%rd\d+), \d+, %p\d+;", ptx) if a in clamped}
    narrowed = dict(re.findall(r"cvt\.u32\.u64\s+(%r\d+), (%rd\d+);", ptx))
    amounts = re.findall(r"sh[lr]\.[bsu]64\s+%rd\d+, %rd\d+, (%r\d+);", ptx)
    assert amounts and all(narrowed.get(r) in clamped for r in amounts), ptx


@pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
@pytest.mark.parametrize("dtype", [np.int64, np.uint64], ids=str)
def test_out_of_range_amounts_on_gpu(dtype):
    x, a = _inputs(dtype)
    want_l, want_r = np.full_like(x, 7), np.full_like(x, 7)
    got_l, got_r = np.full_like(x, 7), np.full_like(x, 7)
    shifts[(1,)](x, a, want_l, want_r, BLOCK=256, backend="interpreter")
    shifts[(1,)](x, a, got_l, got_r, BLOCK=256, backend="cuda")
    np.testing.assert_array_equal(got_l, want_l)
    np.testing.assert_array_equal(got_r, want_r)
