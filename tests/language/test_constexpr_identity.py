"""``is``, ``is not``, ``==`` and ``!=`` on dtypes from every source agree with Triton.

Rules checked against Triton 3.9 (its code generator's ``visit_Compare`` evaluates ``is`` /
``is not`` on the values inside constexprs): these kernels, ported by changing the imports, give
the same answers under ``TRITON_INTERPRET=1``, and ``triton.compile`` (TTIR constants) agrees
on the cases where its interpreter differs.  A dtype from a constexpr parameter, from
``ptr.dtype.element_ty``, from ``x.dtype``, a ``tl.float32`` global, a dtype handed to or
returned from a ``@jit`` helper and ``tl.constexpr(tl.float16)`` all are ``tl.<name>`` when equal
to it.  (Triton's interpreter alone answers False for ``tl.constexpr(tl.float32) is tl.float32``;
we follow its compiler.)
"""

import copy
import pickle

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl

_MIN_FLOAT32_VAL = tl.constexpr(float(np.finfo(np.float32).min))
_MAX_FLOAT32_VAL = tl.constexpr(float(np.finfo(np.float32).max))
_MIN_FLOAT16_VAL = tl.constexpr(float(np.finfo(np.float16).min))
_MAX_FLOAT16_VAL = tl.constexpr(float(np.finfo(np.float16).max))
_MIN_BFLOAT16_VAL = tl.constexpr(float(ml_dtypes.finfo(ml_dtypes.bfloat16).min))
_MAX_BFLOAT16_VAL = tl.constexpr(float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))


@tiles.jit
def is_f32(dtype):
    return 1.0 if dtype is tl.float32 else 2.0


@tiles.jit
def is_not_f32(dtype):
    return 1.0 if dtype is not tl.float32 else 2.0


@tiles.jit
def eq_f32(dtype):
    return 1.0 if dtype == tl.float32 else 2.0


@tiles.jit
def ne_f32(dtype):
    return 1.0 if dtype != tl.float32 else 2.0


@tiles.jit
def dtype_of(x):
    return x.dtype


@tiles.jit
def identity_kernel(x_ptr, o_ptr, DT: tl.constexpr):
    x = tl.load(x_ptr)
    elem = x_ptr.dtype.element_ty
    # a dtype handed to a helper, from every source
    tl.store(o_ptr + 0, is_f32(elem))
    tl.store(o_ptr + 1, is_f32(DT))
    tl.store(o_ptr + 2, is_f32(x.dtype))
    tl.store(o_ptr + 3, is_f32(tl.float32))
    tl.store(o_ptr + 4, is_f32(dtype_of(x)))
    tl.store(o_ptr + 5, is_not_f32(elem))
    tl.store(o_ptr + 6, eq_f32(elem))
    tl.store(o_ptr + 7, ne_f32(DT))
    # in the kernel itself
    tl.store(o_ptr + 8, 1.0 if DT is tl.float32 else 2.0)
    tl.store(o_ptr + 9, 1.0 if x.dtype is tl.float32 else 2.0)
    tl.store(o_ptr + 10, 1.0 if dtype_of(x) is tl.float32 else 2.0)
    tl.store(o_ptr + 11, 1.0 if tl.constexpr(DT) is tl.float32 else 2.0)
    tl.store(o_ptr + 12, 1.0 if DT is not tl.float32 else 2.0)
    tl.store(o_ptr + 13, 1.0 if DT == tl.float32 else 2.0)
    tl.store(o_ptr + 14, 1.0 if elem != tl.float32 else 2.0)
    same = DT is elem  # bound to a name: a compile-time answer, as in Triton
    if same:
        tl.store(o_ptr + 15, 1.0)
    else:
        tl.store(o_ptr + 15, 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_dtype_identity_from_every_source(dtype):
    x = np.array([1.5, -2.0], dtype)
    o = np.zeros(16, dtype)
    DT = tl.float32 if dtype == np.float32 else tl.float16
    identity_kernel[(1,)](x, o, DT)
    f32 = dtype == np.float32
    yes, no = (1.0, 2.0) if f32 else (2.0, 1.0)
    want = [yes, yes, yes, 1.0, yes, no, yes, no, yes, yes, yes, yes, no, yes, no, 1.0]
    np.testing.assert_array_equal(o, np.array(want, dtype))


@tiles.jit
def same_dtype(dtype):
    return dtype  # a helper's constexpr argument handed back


@tiles.jit
def constexpr_dtype_kernel(o_ptr):
    half = tl.constexpr(tl.float16)
    tl.store(o_ptr + 5, 1.0 if same_dtype(half) is tl.float16 else 2.0)
    tl.store(o_ptr + 6, 1.0 if same_dtype(tl.float32) is not tl.float32 else 2.0)
    tl.store(o_ptr + 7, 1.0 if same_dtype(half) == same_dtype(tl.float16) else 2.0)
    tl.store(o_ptr + 0, 1.0 if half is tl.float16 else 2.0)
    tl.store(o_ptr + 1, 1.0 if half is not tl.float16 else 2.0)
    tl.store(o_ptr + 2, 1.0 if half == tl.float16 else 2.0)
    tl.store(o_ptr + 3, is_f32(half))
    tl.store(o_ptr + 4, 1.0 if tl.pointer_type(tl.float16).element_ty is half else 2.0)


def test_constexpr_wrapped_dtype_is_the_dtype():
    o = np.zeros(8, np.float32)
    constexpr_dtype_kernel[(1,)](o)
    np.testing.assert_array_equal(o, [1.0, 2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0])


@tiles.jit
def _get_finfo_val(
    dtype,
    return_max,
):
    if dtype is tl.float32:
        if return_max:
            return _MAX_FLOAT32_VAL
        else:
            return _MIN_FLOAT32_VAL
    elif dtype is tl.float16:
        if return_max:
            return _MAX_FLOAT16_VAL
        else:
            return _MIN_FLOAT16_VAL
    elif dtype is tl.bfloat16:
        if return_max:
            return _MAX_BFLOAT16_VAL
        else:
            return _MIN_BFLOAT16_VAL


@tiles.jit
def topk_stage1_kernel(
    y_ptr,
    index_ptr,
    x_ptr,
    k,
    N: tl.constexpr,
    CHUNK_SIZE: tl.constexpr,
    DESCENDING: tl.constexpr,
):
    """FlagGems' topk, stage 1: each program picks the top k of one chunk of one row."""
    cur_batch = tl.program_id(0)
    cur_chunk_idx = tl.program_id(1)
    chunk_num = tl.num_programs(1)

    y_ptr += cur_batch * chunk_num * k + cur_chunk_idx * k
    index_ptr += cur_batch * chunk_num * k + cur_chunk_idx * k

    chunk_offset = cur_chunk_idx * CHUNK_SIZE
    x_ptr += cur_batch * N + chunk_offset

    cols = tl.arange(0, CHUNK_SIZE)
    mask = (chunk_offset + cols) < N

    mask_val = _get_finfo_val(x_ptr.dtype.element_ty, return_max=not DESCENDING)
    x_val = tl.load(x_ptr + cols, mask=mask, other=mask_val).to(tl.float32)
    for k_idx in range(k):
        if DESCENDING:
            chunk_select_val = tl.max(x_val)
            chunk_select_idx = tl.argmax(x_val, axis=0)
        else:
            chunk_select_val = tl.min(x_val)
            chunk_select_idx = tl.argmin(x_val, axis=0)

        tl.store(y_ptr + k_idx, chunk_select_val)
        tl.store(index_ptr + k_idx, chunk_select_idx + chunk_offset)

        if DESCENDING:
            x_val = tl.where(cols == chunk_select_idx, _get_finfo_val(tl.float32, return_max=False), x_val)
        else:
            x_val = tl.where(cols == chunk_select_idx, _get_finfo_val(tl.float32, return_max=True), x_val)


def _topk_stage1_reference(x, k, chunk, descending):
    """The same selection in NumPy: padding is the dtype's finfo limit, a taken value becomes
    float32's opposite limit, ties go to the lowest index (tl.argmax/argmin)."""
    batch, n = x.shape
    chunks = -(-n // chunk)
    f32 = np.finfo(np.float32)
    pad = float(ml_dtypes.finfo(x.dtype).min if descending else ml_dtypes.finfo(x.dtype).max)
    y = np.zeros((batch, chunks, k), np.float32)
    idx = np.zeros((batch, chunks, k), np.int64)
    for b in range(batch):
        for c in range(chunks):
            vals = np.full(chunk, pad, np.float32)
            part = x[b, c * chunk:(c + 1) * chunk].astype(np.float32)
            vals[:part.size] = part
            for j in range(k):
                i = int(np.argmax(vals) if descending else np.argmin(vals))
                y[b, c, j], idx[b, c, j] = vals[i], i + c * chunk
                vals[i] = f32.min if descending else f32.max
    return y.reshape(-1), idx.reshape(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("descending", [True, False])
def test_flaggems_topk_get_finfo_val_picks_the_dtype_branch(rng, dtype, descending):
    batch, n, chunk, k = 2, 37, 16, 7  # the last chunk holds 5 values: 2 padding lanes are taken
    x = rng.standard_normal((batch, n)).astype(dtype)
    chunks = -(-n // chunk)
    y = np.zeros(batch * chunks * k, dtype)
    idx = np.zeros(batch * chunks * k, np.int64)
    topk_stage1_kernel[(batch, chunks)](y, idx, x, k, n, chunk, descending)
    want_y, want_idx = _topk_stage1_reference(x, k, chunk, descending)
    np.testing.assert_array_equal(y.astype(np.float32), want_y.astype(dtype).astype(np.float32))
    np.testing.assert_array_equal(idx, want_idx)


def test_dtypes_are_interned_through_copies_and_pickle(backend):
    if backend != "interpreter":
        pytest.skip("host-side objects: one backend suffices")
    for d in (tl.float32, tl.bfloat16, tl.int1, tl.uint64, tl.float8e5):
        assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d and copy.copy(d) is d
    p = pickle.loads(pickle.dumps(tl.pointer_type(tl.float16)))
    assert p == tl.pointer_type(tl.float16) and p.element_ty is tl.float16


@tiles.jit
def finfo_fallthrough_kernel(o_ptr, DT: tl.constexpr):
    """``_get_finfo_val`` has no ``else``: for another dtype it falls off the end and gives None."""
    tl.store(o_ptr + 0, 1.0 if _get_finfo_val(DT, True) is None else 2.0)
    tl.store(o_ptr + 1, 1.0 if _get_finfo_val(tl.float16, False) is not None else 2.0)
    tl.store(o_ptr + 2, _get_finfo_val(tl.float16, True))


def test_get_finfo_val_without_a_matching_branch_returns_none():
    o = np.zeros(3, np.float32)
    finfo_fallthrough_kernel[(1,)](o, tl.int32)
    np.testing.assert_array_equal(o, [1.0, 1.0, 65504.0])
