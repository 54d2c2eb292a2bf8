"""torchao (float8nocompile) style dynamic tensorwise float8 casting: a global amax either by
``tl.atomic_max`` of per-block ``tl.max(tl.abs(x))`` into one fp32 word (the ``sem="relaxed"``
branch chosen by ``tl.constexpr(<host expression>)``) or by per-block partials folded in a
``for i in range(tl.cdiv(n, BLOCK))`` loop into a ``tl.zeros([1], tl.float64)`` accumulator;
the scale computed in float64 (``fp8_max / tl.clamp(amax, min=EPS, max=float("inf"))``) and
stored through ``tl.arange(0, 1)``; then the cast kernels: ``.to(input_dtype)`` with the dtype a
constexpr, ``tl.clamp(x * scale, min=fp8_min, max=fp8_max)`` with bounds passed as annotated
``float`` arguments, ``.to(output_dtype)`` to float8e4nv / float8e5, and one tile stored twice:
row-major and transposed (``fp8_vals.trans(1, 0)``) with all four strides as ``int``
arguments, so odd shapes exercise both masks."""

import ml_dtypes
import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl

EPS = 1e-12
IS_HIP = tl.constexpr(False)
_TL = {np.dtype(np.float32): tl.float32, np.dtype(np.float16): tl.float16, BF16: tl.bfloat16,
       np.dtype(ml_dtypes.float8_e4m3fn): tl.float8e4nv, np.dtype(ml_dtypes.float8_e5m2): tl.float8e5}


@tiles.jit
def _amax_atomic(input_ptr, amax_ptr, num_elements, input_dtype: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                 EPS: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    vals = tl.load(input_ptr + offs, mask=offs < num_elements, other=0.0).to(input_dtype)
    block_amax = tl.max(tl.abs(vals))
    if tl.constexpr(IS_HIP):
        tl.atomic_max(amax_ptr, block_amax, sem="relaxed")
    else:
        tl.atomic_max(amax_ptr, block_amax)


@tiles.jit
def _scale_atomic(amax_ptr, scale_out_ptr, fp8_dtype_max, EPS: tl.constexpr):
    global_amax = tl.load(amax_ptr).to(tl.float64)
    scale = (fp8_dtype_max / tl.clamp(global_amax, min=EPS, max=float("inf"))).to(tl.float32)
    tl.store(scale_out_ptr + tl.arange(0, 1), scale)


@tiles.jit
def _amax_reduction(input_ptr, block_amaxes_ptr, num_elements, input_dtype: tl.constexpr,
                    BLOCK_SIZE: tl.constexpr, EPS: tl.constexpr):
    block_id = tl.program_id(axis=0)
    offs = block_id * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    vals = tl.load(input_ptr + offs, mask=offs < num_elements, other=0.0).to(input_dtype)
    tl.store(block_amaxes_ptr + block_id, tl.max(tl.abs(vals)))


@tiles.jit
def _scale_reduction(block_amaxes_ptr, scale_out_ptr, num_elements, fp8_dtype_max, BLOCK_SIZE: tl.constexpr,
                     EPS: tl.constexpr):
    global_amax = tl.zeros([1], dtype=tl.float64)
    for i in range(tl.cdiv(num_elements, BLOCK_SIZE)):
        global_amax = tl.maximum(global_amax, tl.load(block_amaxes_ptr + i))
    scale = (fp8_dtype_max / tl.clamp(global_amax, min=EPS, max=float("inf"))).to(tl.float32)
    tl.store(scale_out_ptr + tl.arange(0, 1), scale)


@tiles.jit
def _to_fp8_row_major_t_and_non_t(input_ptr, row_major_out_ptr, row_major_t_out_ptr, scale_ptr, num_elements: int,
                                  fp8_dtype_min: float, fp8_dtype_max: float, input_num_rows: int,
                                  input_num_cols: int, input_stride_row: int, input_stride_col: int,
                                  out_stride_row: int, out_stride_col: int, out_t_stride_row: int,
                                  out_t_stride_col: int, input_dtype: tl.constexpr, output_dtype: tl.constexpr,
                                  BLOCK_SIZE_ROWS: tl.constexpr, BLOCK_SIZE_COLS: tl.constexpr,
                                  EPS: tl.constexpr):
    scale = tl.load(scale_ptr).to(tl.float32)
    rows = tl.program_id(axis=0) * BLOCK_SIZE_ROWS + tl.arange(0, BLOCK_SIZE_ROWS)
    cols = tl.program_id(axis=1) * BLOCK_SIZE_COLS + tl.arange(0, BLOCK_SIZE_COLS)
    mask = (rows[:, None] < input_num_rows) & (cols[None, :] < input_num_cols)
    vals = tl.load(input_ptr + rows[:, None] * input_stride_row + cols[None, :] * input_stride_col,
                   mask=mask).to(input_dtype)
    fp8_vals = tl.clamp(vals * scale, min=fp8_dtype_min, max=fp8_dtype_max).to(output_dtype)
    tl.store(row_major_out_ptr + rows[:, None] * out_stride_row + cols[None, :] * out_stride_col, fp8_vals,
             mask=mask)
    t_mask = (cols[:, None] < input_num_cols) & (rows[None, :] < input_num_rows)
    tl.store(row_major_t_out_ptr + cols[:, None] * out_t_stride_row + rows[None, :] * out_t_stride_col,
             fp8_vals.trans(1, 0), mask=t_mask)


def hp_to_fp8(x, fp8_dtype, algo):
    n = x.size
    finfo = ml_dtypes.finfo(fp8_dtype)
    scale = np.empty(1, np.float32)
    block = 128
    if algo == "atomic_max":
        amax = np.zeros(1, np.float32)
        _amax_atomic[(tiles.cdiv(n, block),)](x, amax, n, _TL[x.dtype], BLOCK_SIZE=block, EPS=EPS)
        _scale_atomic[(1,)](amax, scale, float(finfo.max), EPS=EPS)
    else:
        partial = np.empty(tiles.cdiv(n, block), np.float32)
        _amax_reduction[(partial.size,)](x, partial, n, _TL[x.dtype], BLOCK_SIZE=block, EPS=EPS)
        _scale_reduction[(1,)](partial, scale, n, float(finfo.max), BLOCK_SIZE=block, EPS=EPS)
    rows, cols = x.shape
    out = np.empty((rows, cols), fp8_dtype)
    out_t = np.empty((cols, rows), fp8_dtype)
    grid = (tiles.cdiv(rows, 32), tiles.cdiv(cols, 32))
    _to_fp8_row_major_t_and_non_t[grid](x, out, out_t, scale, n, float(finfo.min), float(finfo.max), rows, cols,
                                        cols, 1, cols, 1, rows, 1, input_dtype=_TL[x.dtype],
                                        output_dtype=_TL[np.dtype(fp8_dtype)], BLOCK_SIZE_ROWS=32,
                                        BLOCK_SIZE_COLS=32, EPS=EPS)
    return scale[0], out, out_t


def check(rng):
    for dtype, fp8_dtype, shape in ((np.float32, ml_dtypes.float8_e4m3fn, (45, 77)),
                                    (BF16, ml_dtypes.float8_e5m2, (33, 40)),
                                    (np.float16, ml_dtypes.float8_e4m3fn, (64, 31))):
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        x[0, :3] = np.array([0.0, -0.0, -17.5]).astype(dtype)
        amax = np.abs(x.astype(np.float64)).max()
        fp8_max = float(ml_dtypes.finfo(fp8_dtype).max)
        ref_scale = np.float32(fp8_max / max(amax, EPS))
        scales = []
        for algo in ("atomic_max", "reduction"):
            scale, out, out_t = hp_to_fp8(x, fp8_dtype, algo)
            close(scale, ref_scale, rtol=0, atol=0)  # fp64 division of the exact amax, one rounding
            ref = np.clip(x.astype(np.float32) * ref_scale, -fp8_max, fp8_max).astype(fp8_dtype)
            close(out.astype(np.float32), ref.astype(np.float32), rtol=0, atol=0)
            close(out_t.astype(np.float32), ref.T.astype(np.float32), rtol=0, atol=0)
            scales.append(scale)
        assert scales[0] == scales[1]
    zeros = np.zeros((5, 7), np.float32)
    scale, out, _ = hp_to_fp8(zeros, ml_dtypes.float8_e4m3fn, "atomic_max")
    close(scale, np.float32(448.0 / EPS), rtol=0, atol=0)  # amax clamped up to EPS
    close(out.astype(np.float32), zeros, rtol=0, atol=0)
