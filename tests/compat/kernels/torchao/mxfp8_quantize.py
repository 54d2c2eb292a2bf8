"""torchao style MXFP8 quantisation along dim 1 (blocks of 32 *rows* per column): a [ROW_TILE,
COL_TILE] tile is loaded, ``tl.trans``'d and reshaped to [COL_TILE * blocks, 32] (method form
``x.reshape(a, b)`` and the varargs ``tl.reshape(x, a, b)``), its NaN-as-inf absolute max turned
into an e8m0 exponent byte two ways: 'rceil' by bit surgery on the fp32 scale (``bitcast``,
``>> 23 & 0xFF``, mantissa tests, a PTX ``tl.inline_asm_elementwise`` path left in a branch
that the ``USE_PTX`` constexpr prunes) and 'floor' through a bf16 detour with ``tl.clamp``; the
reciprocal scale built as ``(254 - e) << 23`` bitcast back to fp32 in nested ``tl.where``; a
function-local ``X: tl.constexpr = ...``; values cast with ``.to(tl.float8e4nv)`` and stored
column-major, scale bytes through uint8 pointers.  Dequantisation (dim 0 blocks, ao's form)
turns e8m0 into fp32 via ``tl.exp2`` of an int16 and stores an ``out_dtype`` constexpr.
Edge blocks: all zeros, one NaN (whole block NaN), +inf, tiny values."""

import ml_dtypes
import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)


@tiles.jit
def _amax_nan_as_inf(x, axis):
    return tl.max(tl.where(x == x, x, float("inf")), axis=axis)


@tiles.jit
def _reciprocal_scale(e8m0):
    FP32_MANTISSA_BITS: tl.constexpr = 23
    return tl.where(e8m0 == 255, float("nan"),
                    tl.where(e8m0 == 254, 2**-127,
                             ((254 - e8m0).to(tl.int32) << FP32_MANTISSA_BITS).to(tl.float32, bitcast=True)))


@tiles.jit
def _f32_to_e8m0_rceil(value):
    bits = value.to(tl.int32, bitcast=True)
    biased_exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    round_up = tl.where(biased_exponent == 0, mantissa > 0x400000, mantissa != 0)
    e8m0 = biased_exponent + round_up.to(tl.int32)
    return tl.where(biased_exponent != 0xFF, e8m0, 0xFF).to(tl.uint8)


@tiles.jit
def _scale_rceil(x_abs, axis, USE_PTX: tl.constexpr):
    F8E4M3_MAX_RCP: tl.constexpr = 1.0 / 448.0
    scale_input = _amax_nan_as_inf(x_abs, axis) * F8E4M3_MAX_RCP
    if USE_PTX:
        e8m0 = tl.inline_asm_elementwise(asm="cvt.rp.ue8m0x2.f32 $0, 0.0, $1;", constraints="=h,r",
                                         args=[scale_input], dtype=tl.uint16, is_pure=True, pack=1).to(tl.uint8)
    else:
        e8m0 = _f32_to_e8m0_rceil(scale_input)
    return _reciprocal_scale(e8m0), e8m0


@tiles.jit
def _scale_floor(x_abs, axis):
    max_abs = _amax_nan_as_inf(x_abs, axis).to(tl.float32)
    pow2 = ((max_abs.to(tl.int32, bitcast=True) >> 23) & 0b11111111) - 127 - 8
    unbiased = tl.clamp(pow2.to(tl.bfloat16), -127, 128)
    e8m0 = tl.where(max_abs < float("inf"), unbiased + 127, 255).to(tl.uint8)
    return _reciprocal_scale(e8m0), e8m0


@tiles.jit
def to_mxfp8_dim1_kernel(x_ptr, out_ptr, scale_ptr, n_rows, n_cols, ROW_TILE_SIZE: tl.constexpr,
                         COL_TILE_SIZE: tl.constexpr, INNER_BLOCK_SIZE: tl.constexpr, SCALING_MODE: tl.constexpr,
                         USE_PTX: tl.constexpr):
    BLOCKS_PER_ROW_TILE: tl.constexpr = ROW_TILE_SIZE // INNER_BLOCK_SIZE
    pid_row = tl.program_id(0)
    pid_col = tl.program_id(1)
    rows = pid_row * ROW_TILE_SIZE + tl.arange(0, ROW_TILE_SIZE)[:, None]
    cols = pid_col * COL_TILE_SIZE + tl.arange(0, COL_TILE_SIZE)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows.to(tl.int64) * n_cols + cols, mask=mask, other=0.0)
    x_t_r = tl.trans(x).reshape(COL_TILE_SIZE * BLOCKS_PER_ROW_TILE, INNER_BLOCK_SIZE)
    if SCALING_MODE == "rceil":
        rcp, e8m0 = _scale_rceil(tl.abs(x_t_r), axis=1, USE_PTX=USE_PTX)
    else:
        tl.static_assert(SCALING_MODE == "floor")
        rcp, e8m0 = _scale_floor(tl.abs(x_t_r), axis=1)
    normalized = tl.reshape(x_t_r * rcp[:, None], COL_TILE_SIZE, ROW_TILE_SIZE)
    q = tl.trans(normalized).to(tl.float8e4nv)
    tl.store(out_ptr + cols.to(tl.int64) * n_rows + rows, q, mask=mask)
    idx = tl.arange(0, COL_TILE_SIZE * BLOCKS_PER_ROW_TILE)
    c = pid_col * COL_TILE_SIZE + idx // BLOCKS_PER_ROW_TILE
    b = pid_row * BLOCKS_PER_ROW_TILE + idx % BLOCKS_PER_ROW_TILE
    n_blocks = n_rows // INNER_BLOCK_SIZE
    tl.store(scale_ptr + c * n_blocks + b, e8m0, mask=(c < n_cols) & (b < n_blocks))


@tiles.jit
def _e8m0_to_fp32(scale_e8m0):
    s = tl.exp2((scale_e8m0.to(tl.int16) - 127).to(tl.float32))
    return tl.where(scale_e8m0 != 255, s, float("nan"))


@tiles.jit
def dequant_mxfp8_kernel(data_ptr, scale_ptr, out_ptr, n_rows, n_cols, out_dtype: tl.constexpr,
                         SCALE_BLOCK_SIZE: tl.constexpr, ROW_TILE_SIZE: tl.constexpr, COL_TILE_SIZE: tl.constexpr):
    SCALES_PER_TILE: tl.constexpr = COL_TILE_SIZE // SCALE_BLOCK_SIZE
    rows = tl.program_id(0) * ROW_TILE_SIZE + tl.arange(0, ROW_TILE_SIZE)
    cols = tl.program_id(1) * COL_TILE_SIZE + tl.arange(0, COL_TILE_SIZE)
    offs = rows[:, None] * n_cols + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    data = tl.load(data_ptr + offs, mask=mask, other=0.0)
    scale_cols = tl.program_id(1) * SCALES_PER_TILE + tl.arange(0, SCALES_PER_TILE)
    n_scale_cols = n_cols // SCALE_BLOCK_SIZE
    scales = tl.load(scale_ptr + rows[:, None] * n_scale_cols + scale_cols[None, :],
                     mask=(rows[:, None] < n_rows) & (scale_cols[None, :] < n_scale_cols), other=127)
    hp = data.reshape(ROW_TILE_SIZE * SCALES_PER_TILE, SCALE_BLOCK_SIZE).to(tl.float32) * \
        _e8m0_to_fp32(scales.reshape(ROW_TILE_SIZE * SCALES_PER_TILE, 1))
    tl.store(out_ptr + offs, hp.to(out_dtype).reshape(ROW_TILE_SIZE, COL_TILE_SIZE), mask=mask)


def _reference(x, mode):
    """torchao's to_mx along dim 1: (e8m0 bytes [C, R // 32], fp8 data [C, R]); data clamped to +-448."""
    R, C = x.shape
    blocks = x.T.reshape(C, R // 32, 32)
    amax = np.where(np.isnan(blocks), np.float32(np.inf), np.abs(blocks)).max(-1).astype(np.float32)
    if mode == "rceil":
        bits = (amax * np.float32(1 / 448)).view(np.int32)
        exp, man = (bits >> 23) & 0xFF, bits & 0x7FFFFF
        e8m0 = np.where(exp != 0xFF, exp + np.where(exp == 0, man > 0x400000, man != 0), 0xFF)
    else:
        pow2 = ((amax.view(np.int32) >> 23) & 0xFF) - 127 - 8
        e8m0 = np.where(amax < np.inf, np.clip(pow2, -127, 128) + 127, 255)
    e8m0 = e8m0.astype(np.uint8)
    rcp = np.where(e8m0 == 255, np.nan, np.ldexp(np.float32(1), 127 - e8m0.astype(np.int32))).astype(np.float32)
    scaled = np.clip(blocks * rcp[..., None], -448, 448)
    return e8m0, scaled.reshape(C, R).astype(FP8)


def _as_f32(a):
    return np.asarray(a).astype(np.float32)


def check(rng):
    R, C = 96, 37
    x = (rng.standard_normal((R, C)) * np.exp2(rng.integers(-6, 7, (1, C)))).astype(np.float32)
    x[0:32, 0] = 0.0
    x[40, 1] = np.nan
    x[70, 2] = np.inf
    x[32:64, 3] *= np.float32(1e-30)
    grid = (tiles.cdiv(R, 64), tiles.cdiv(C, 16))
    out_rc = None
    for mode in ("rceil", "floor"):  # floor last: it needs fp8 conversion to saturate at 448
        out = np.full((C, R), np.nan, FP8)
        scales = np.zeros((C, R // 32), np.uint8)
        to_mxfp8_dim1_kernel[grid](x, out, scales, R, C, ROW_TILE_SIZE=64, COL_TILE_SIZE=16, INNER_BLOCK_SIZE=32,
                                   SCALING_MODE=mode, USE_PTX=False)
        ref_scales, ref_out = _reference(x, mode)
        close(scales, ref_scales)
        # one rounding to e4m3 (3 mantissa bits) of identical fp32 products: equal bytes
        close(_as_f32(out), _as_f32(ref_out), rtol=0, atol=0)
        if mode == "rceil":
            out_rc = out
            for out_dtype, np_dtype in ((tl.float32, np.float32), (tl.bfloat16, BF16)):
                back = np.empty((C, R), np_dtype)
                dequant_mxfp8_kernel[(tiles.cdiv(C, 16), tiles.cdiv(R, 64))](
                    out_rc, scales, back, C, R, out_dtype=out_dtype, SCALE_BLOCK_SIZE=32, ROW_TILE_SIZE=16,
                    COL_TILE_SIZE=64)
                expect = _as_f32(ref_out).reshape(C, R // 32, 32) * \
                    np.where(ref_scales == 255, np.nan, np.exp2(ref_scales.astype(np.float64) - 127))[..., None]
                close(_as_f32(back), expect.reshape(C, R).astype(np_dtype), rtol=0, atol=0)
                blocks = x.T.reshape(C, R // 32, 32)
                ok = np.isfinite(blocks).all(-1)
                err = np.abs(_as_f32(back).reshape(C, R // 32, 32) - blocks).max(-1)
                # e4m3 keeps 3 mantissa bits: error at most 2^-4 of the block's absolute max
                assert (err[ok] <= 0.0625 * np.abs(blocks).max(-1)[ok]).all()
