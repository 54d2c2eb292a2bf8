"""FlagGems ``pointwise_dynamic`` style generated kernels for ``torch.polar`` (two outputs written
into the strided real/imag views of one ``(..., 2)`` buffer) and ``torch.angle``.

Language features exercised: the generated signature's annotations (``in0_ptr: tl.tensor``,
strides and task space as ``s0: int``, ``tiles_per_cta: int``, stride orders as
``in0_stride_order0: tl.constexpr``); a rank-2 tile index rebuilt with ``%``/``//=``;
``tl.make_block_ptr`` with ``(offset0, offset1)`` cast ``.to(tl.int32)``, ``order=`` taken from
those constexpr stride orders and ``boundary_check=`` given the same tuple; the load cast
``.to(in0_ptr.type.element_ty)`` and the store cast ``.to(out0_bptr.type.element_ty)`` (the element
type of a *block pointer*, a block type); ``if one_tile_per_cta:`` versus a grid-stride
``for j in range(0, tiles_per_cta)`` loop; a ``@jit`` scalar function returning a tuple from
``tl.cos``/``tl.sin`` (not otherwise in the corpus); a conditional expression choosing a tuple on
``real.dtype == tl.float16``; ``math.pi`` read from a module global; ``tl.where`` between two
Python floats; ``atan2`` from libdevice; the no-block-pointer form with broadcast 2-D masks."""

import math

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import atan2


@tiles.jit
def polar_fn(abs, angle):
    real = abs * tl.cos(angle)
    imag = abs * tl.sin(angle)
    return real, imag


@tiles.jit
def angle_complex_fn(real, imag):
    real_last, imag_last = (real.to(tl.float32), imag.to(tl.float32)) if real.dtype == tl.float16 else (real, imag)
    return atan2(imag_last, real_last)


@tiles.jit
def angle_real_fn(real):
    zero = 0.0
    pi = math.pi
    return tl.where(real >= zero, zero, pi)


@tiles.jit
def _polar_rank_2(
    in0_ptr: tl.tensor,  # of tl.pointer_type
    in1_ptr: tl.tensor,  # of tl.pointer_type
    out0_ptr: tl.tensor,  # of tl.pointer_type
    out1_ptr: tl.tensor,  # of tl.pointer_type
    in0_stride0: int, in0_stride1: int,
    in0_stride_order0: tl.constexpr, in0_stride_order1: tl.constexpr,
    in1_stride0: int, in1_stride1: int,
    in1_stride_order0: tl.constexpr, in1_stride_order1: tl.constexpr,
    out0_stride0: int, out0_stride1: int,
    out0_stride_order0: tl.constexpr, out0_stride_order1: tl.constexpr,
    out1_stride0: int, out1_stride1: int,
    out1_stride_order0: tl.constexpr, out1_stride_order1: tl.constexpr,
    s0: int, s1: int,  # task_space
    num_tasks: int,
    tiles_per_cta: int,
    tile_size0: tl.constexpr, tile_size1: tl.constexpr,
    one_tile_per_cta: tl.constexpr,
):
    pid = tl.program_id(0)
    num_tiles0 = tl.cdiv(s0, tile_size0)  # noqa: F841  (generated code computes it for every rank)
    num_tiles1 = tl.cdiv(s1, tile_size1)
    if one_tile_per_cta:  # monolithic kernel style
        tile_id = pid
        tile_id1 = tile_id % num_tiles1
        tile_id //= num_tiles1
        tile_id0 = tile_id
        offset0 = (tile_id0 * tile_size0).to(tl.int32)
        offset1 = (tile_id1 * tile_size1).to(tl.int32)
        in0_bptr = tl.make_block_ptr(in0_ptr, (s0, s1), (in0_stride0, in0_stride1), (offset0, offset1),
                                     (tile_size0, tile_size1), order=(in0_stride_order0, in0_stride_order1))
        in0 = tl.load(in0_bptr, boundary_check=(in0_stride_order0, in0_stride_order1)).to(in0_ptr.type.element_ty)
        in1_bptr = tl.make_block_ptr(in1_ptr, (s0, s1), (in1_stride0, in1_stride1), (offset0, offset1),
                                     (tile_size0, tile_size1), order=(in1_stride_order0, in1_stride_order1))
        in1 = tl.load(in1_bptr, boundary_check=(in1_stride_order0, in1_stride_order1)).to(in1_ptr.type.element_ty)
        out0, out1 = polar_fn(in0, in1)
        out0_bptr = tl.make_block_ptr(out0_ptr, (s0, s1), (out0_stride0, out0_stride1), (offset0, offset1),
                                      (tile_size0, tile_size1), order=(out0_stride_order0, out0_stride_order1))
        tl.store(out0_bptr, out0.to(out0_bptr.type.element_ty), boundary_check=(out0_stride_order0, out0_stride_order1))
        out1_bptr = tl.make_block_ptr(out1_ptr, (s0, s1), (out1_stride0, out1_stride1), (offset0, offset1),
                                      (tile_size0, tile_size1), order=(out1_stride_order0, out1_stride_order1))
        tl.store(out1_bptr, out1.to(out1_bptr.type.element_ty), boundary_check=(out1_stride_order0, out1_stride_order1))
    else:  # grid-stride loop style
        num_ctas = tl.num_programs(0)
        for j in range(0, tiles_per_cta):
            tile_id = pid + j * num_ctas
            tile_id1 = tile_id % num_tiles1
            tile_id //= num_tiles1
            tile_id0 = tile_id
            offset0 = (tile_id0 * tile_size0).to(tl.int32)
            offset1 = (tile_id1 * tile_size1).to(tl.int32)
            in0_bptr = tl.make_block_ptr(in0_ptr, (s0, s1), (in0_stride0, in0_stride1), (offset0, offset1),
                                         (tile_size0, tile_size1), order=(in0_stride_order0, in0_stride_order1))
            in0 = tl.load(in0_bptr, boundary_check=(in0_stride_order0, in0_stride_order1)).to(in0_ptr.type.element_ty)
            in1_bptr = tl.make_block_ptr(in1_ptr, (s0, s1), (in1_stride0, in1_stride1), (offset0, offset1),
                                         (tile_size0, tile_size1), order=(in1_stride_order0, in1_stride_order1))
            in1 = tl.load(in1_bptr, boundary_check=(in1_stride_order0, in1_stride_order1)).to(in1_ptr.type.element_ty)
            out0, out1 = polar_fn(in0, in1)
            out0_bptr = tl.make_block_ptr(out0_ptr, (s0, s1), (out0_stride0, out0_stride1), (offset0, offset1),
                                          (tile_size0, tile_size1), order=(out0_stride_order0, out0_stride_order1))
            tl.store(out0_bptr, out0.to(out0_bptr.type.element_ty),
                     boundary_check=(out0_stride_order0, out0_stride_order1))
            out1_bptr = tl.make_block_ptr(out1_ptr, (s0, s1), (out1_stride0, out1_stride1), (offset0, offset1),
                                          (tile_size0, tile_size1), order=(out1_stride_order0, out1_stride_order1))
            tl.store(out1_bptr, out1.to(out1_bptr.type.element_ty),
                     boundary_check=(out1_stride_order0, out1_stride_order1))


@tiles.jit
def _angle_rank_2(
    in0_ptr: tl.tensor,  # of tl.pointer_type
    in1_ptr: tl.tensor,  # of tl.pointer_type
    out0_ptr: tl.tensor,  # of tl.pointer_type
    in0_stride0: int, in0_stride1: int,
    in1_stride0: int, in1_stride1: int,
    out0_stride0: int, out0_stride1: int,
    s0: int, s1: int,  # task_space
    num_tasks: int,
    tiles_per_cta: int,
    tile_size0: tl.constexpr, tile_size1: tl.constexpr,
    one_tile_per_cta: tl.constexpr,
    IS_COMPLEX: tl.constexpr,
):
    pid = tl.program_id(0)
    num_tiles1 = tl.cdiv(s1, tile_size1)
    num_ctas = tl.num_programs(0)
    for j in range(0, tiles_per_cta):
        tile_id = pid + j * num_ctas
        tile_id1 = tile_id % num_tiles1
        tile_id //= num_tiles1
        tile_id0 = tile_id
        offsets0 = tile_id0 * tile_size0 + tl.arange(0, tile_size0)
        offsets1 = tile_id1 * tile_size1 + tl.arange(0, tile_size1)
        mask0 = offsets0 < s0
        mask1 = offsets1 < s1
        mask = mask0[:, None] & mask1[None, :]
        in0 = tl.load(in0_ptr + offsets0[:, None] * in0_stride0 + offsets1[None, :] * in0_stride1,
                      mask=mask).to(in0_ptr.type.element_ty)
        if IS_COMPLEX:
            in1 = tl.load(in1_ptr + offsets0[:, None] * in1_stride0 + offsets1[None, :] * in1_stride1,
                          mask=mask).to(in1_ptr.type.element_ty)
            out0 = angle_complex_fn(in0, in1)
        else:
            out0 = angle_real_fn(in0)
        tl.store(out0_ptr + offsets0[:, None] * out0_stride0 + offsets1[None, :] * out0_stride1, out0, mask=mask)


def _st(a):
    return [s // a.itemsize for s in a.strides]


def check(rng):
    M, N = 13, 21
    ts0, ts1 = 4, 8
    num_tiles = -(-M // ts0) * -(-N // ts1)
    mag = rng.random((M, N)).astype(np.float32) * 3
    ang = ((rng.random((M, N)) - 0.5) * 8).astype(np.float32)
    mag_t = np.ascontiguousarray(mag.T).T  # column-major input: stride order (0, 1)
    expected = mag.astype(np.float64) * np.exp(1j * ang.astype(np.float64))
    for ctas, one in ((num_tiles, True), (5, False)):
        buf = np.full((M, N, 2), 7.0, np.float32)
        re, im = buf[..., 0], buf[..., 1]
        _polar_rank_2[(ctas,)](mag_t, ang, re, im, *_st(mag_t), 0, 1, *_st(ang), 1, 0, *_st(re), 1, 0,
                               *_st(im), 1, 0, M, N, M * N, -(-num_tiles // ctas), tile_size0=ts0,
                               tile_size1=ts1, one_tile_per_cta=one)
        close(buf[..., 0], expected.real, rtol=1e-5, atol=1e-5)
        close(buf[..., 1], expected.imag, rtol=1e-5, atol=1e-5)

    # angle of a complex fp16 tensor given as (real, imag) views of one (M, N, 2) buffer
    z = rng.standard_normal((M, N, 2)).astype(np.float16)
    z[0, :6] = [[0, 0], [-0.0, 0], [0, -0.0], [-1, 0], [-1, -0.0], [np.inf, np.inf]]
    out = np.zeros((M, N), np.float16)
    grid = 6
    _angle_rank_2[(grid,)](z[..., 0], z[..., 1], out, *_st(z[..., 0]), *_st(z[..., 1]), *_st(out), M, N, M * N,
                           -(-num_tiles // grid), tile_size0=ts0, tile_size1=ts1, one_tile_per_cta=False,
                           IS_COMPLEX=True)
    z64 = z.astype(np.float64)
    close(out, np.arctan2(z64[..., 1], z64[..., 0]).astype(np.float16), rtol=2e-3, atol=2e-3)
    # angle of a real float32 tensor: 0 or pi (NaN compares false: pi)
    x = rng.standard_normal((M, N)).astype(np.float32)
    x[0, :3] = [-0.0, np.nan, -np.inf]
    out = np.zeros((M, N), np.float32)
    _angle_rank_2[(grid,)](x, x, out, *_st(x), *_st(x), *_st(out), M, N, M * N, -(-num_tiles // grid),
                           tile_size0=ts0, tile_size1=ts1, one_tile_per_cta=False, IS_COMPLEX=False)
    close(out, np.where(x >= 0, 0.0, np.pi).astype(np.float32))
