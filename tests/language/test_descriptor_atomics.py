"""Tensor descriptors' atomic reductions (``desc.atomic_add/min/max/and/or/xor``, Triton's
``test_tensor_descriptor_reduce``): each element of the block at the offsets is combined with the
value atomically; elements outside the descriptor's shape are left alone.  A device descriptor
(``tl.make_tensor_descriptor``) and a host one (``TensorDescriptor``) on odd sizes, NumPy as the
reference, blocks that overlap so that several programs hit the same elements."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.tools.tensor_descriptor import TensorDescriptor


@tiles.jit
def reduce_kernel(out_desc, out_ptr, in_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, KIND: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)[:, None]
    cols = pn * BN + tl.arange(0, BN)[None, :]
    val = tl.load(in_ptr + rows * N + cols, mask=(rows < M) & (cols < N), other=0)
    if out_desc is None:
        desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    else:
        desc = out_desc
    at = [pm * BM, pn * BN]
    if KIND == "add":
        desc.atomic_add(at, val)
    elif KIND == "min":
        desc.atomic_min(at, val)
    elif KIND == "max":
        desc.atomic_max(at, val)
    elif KIND == "and":
        desc.atomic_and(at, val)
    elif KIND == "or":
        desc.atomic_or(at, val)
    else:
        tl.static_assert(KIND == "xor")
        desc.atomic_xor(at, val)


NUMPY = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor}
CASES = [(kind, dtype) for kind in ("add", "min", "max") for dtype in (np.int32, np.uint32, np.float32)] + \
        [(kind, dtype) for kind in ("and", "or", "xor") for dtype in (np.int32, np.uint32, np.int64)]


def _random(rng, shape, dtype):
    if dtype == np.float32:
        x = rng.standard_normal(shape).astype(np.float32) * 100
        x.flat[:3] = [0.0, -0.0, 3.0e38]
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x.flat[:2] = [info.min, info.max]
    return x


@pytest.mark.parametrize("kind, dtype", CASES)
@pytest.mark.parametrize("where", ["device", "host"])
def test_descriptor_atomics_match_numpy(rng, kind, dtype, where):
    # the last row and column blocks hang over the edge (a host descriptor's rows must be
    # 16-byte multiples, hence 36 there)
    m, n, bm, bn = 13, 37 if where == "device" else 36, 8, 16
    inp = _random(rng, (m, n), dtype)
    out = _random(rng, (m, n), dtype)
    with np.errstate(over="ignore"):
        want = NUMPY[kind](out, inp)
    desc = TensorDescriptor.from_tensor(out, [bm, bn]) if where == "host" else None
    reduce_kernel[(tiles.cdiv(m, bm), tiles.cdiv(n, bn))](desc, out, inp, m, n, bm, bn, kind)
    if dtype == np.float32:
        np.testing.assert_allclose(out, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(out, want)


@tiles.jit
def overlap_kernel(out_ptr, in_ptr, N, B: tl.constexpr):
    desc = tl.make_tensor_descriptor(out_ptr, shape=[1, N], strides=[N, 1], block_shape=[1, B])
    offs = tl.arange(0, B)[None, :]
    val = tl.load(in_ptr + tl.program_id(0) * B + offs)
    desc.atomic_add([0, tl.program_id(0) * (B // 2)], val)  # neighbours share half a block


def test_overlapping_blocks_all_land(rng):
    b, programs = 16, 5
    n = (programs + 1) * b // 2 - 3  # the last block hangs 3 elements over the edge
    inp = rng.integers(-50, 50, (programs, b)).astype(np.int32)
    out = np.zeros(n, np.int32)
    overlap_kernel[(programs,)](out, inp, n, B=b)
    want = np.zeros(n + b, np.int32)
    for p in range(programs):
        want[p * b // 2:p * b // 2 + b] += inp[p]
    np.testing.assert_array_equal(out, want[:n])


# ------------------------------------------------------------- NaN padding (not an atomic, but a
# descriptor rule of the same Triton test file: test_tensor_descriptor_padding)

@tiles.jit
def padded_load_kernel(in_ptr, in_desc, out_ptr, M, N, YN, BM: tl.constexpr, BN: tl.constexpr,
                       PADDING: tl.constexpr):
    if in_desc is None:
        desc = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                         padding_option=PADDING)
    else:
        desc = in_desc
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    value = desc.load([pm, pn])
    rows = pm + tl.arange(0, BM)[:, None]
    cols = pn + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * YN + cols, value)


@pytest.mark.parametrize("padding", ["nan", "zero"])
@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_descriptor_padding_fills_outside_reads(rng, padding, where, dtype):
    m, n, bm, bn = 21, 40 if where == "host" else 37, 8, 16
    ym, yn = 24, 48  # the output covers every block, past the input's edges
    x = (rng.standard_normal((m, n)) * 10).astype(dtype)
    out = np.full((ym, yn), 7, dtype)
    desc = TensorDescriptor(x, [m, n], [n, 1], [bm, bn], padding=padding) if where == "host" else None
    padded_load_kernel[(ym // bm, yn // bn)](x, desc, out, m, n, yn, bm, bn, padding)
    want = np.full((ym, yn), np.nan if padding == "nan" else 0, dtype)
    want[:m, :n] = x
    np.testing.assert_array_equal(out, want)


def test_nan_padding_needs_a_floating_type():
    with pytest.raises(tiles.CompilationError, match="padding_option='nan' needs a floating element type"):
        padded_load_kernel[(1, 1)](np.zeros((8, 16), np.int32), None, np.zeros((8, 16), np.int32), 8, 16, 16,
                                   8, 16, "nan")
