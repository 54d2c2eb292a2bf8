"""FlagGems style ``upsample_nearest2d``: grid axis 0 tiles the output plane, axis 1 strides over
the ``N * C`` planes in a ``while`` loop that advances the input and output *pointer arguments*.

Language features exercised: ``@autotune(configs, key=[...])`` stacked over ``@heuristics`` that
derive ``SAME_H``/``SAME_W``/``USE_INT32_IDX`` constexprs from the launch arguments; a grid lambda
reading ``META["BLOCK_SIZE"]``; ``tl.program_id(axis=0)`` keyword form and
``tl.num_programs(axis=1)``; ``pid`` bound under a constexpr branch (``.to(tl.int64)``) and then
rebound unconditionally; *unmasked* loads and stores whose flat index wraps with ``%`` past the
end of the plane (the tail lanes rewrite earlier elements with equal values); source coordinates
from ``tl.minimum((oh * reciprocal_scale).to(tl.int32), IH - 1)`` with an int32 times a runtime
float argument; ``while nc_iter < NC:`` with ``ptr_i += stride`` / ``ptr_o += stride`` and a loop
counter that starts from ``tl.program_id(axis=1)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


def _same_h(args):
    return args["OH"] == args["IH"]


def _same_w(args):
    return args["OW"] == args["IW"]


def _int32_idx(args):
    return args["N"] * args["C"] * args["OH"] * args["OW"] <= 2**31 - 1


@tiles.autotune(configs=[tiles.Config({"BLOCK_SIZE": 32}, num_warps=2), tiles.Config({"BLOCK_SIZE": 64}, num_warps=4)],
                key=["N", "C", "OH", "OW"])
@tiles.heuristics({"SAME_H": _same_h, "SAME_W": _same_w, "USE_INT32_IDX": _int32_idx})
@tiles.jit
def upsample_nearest2d_kernel(ptr_o, ptr_i, N, C, OH, OW, IH, IW, reciprocal_scale_h, reciprocal_scale_w,
                              BLOCK_SIZE: tl.constexpr, SAME_H: tl.constexpr, SAME_W: tl.constexpr,
                              USE_INT32_IDX: tl.constexpr):
    if USE_INT32_IDX:
        pid = tl.program_id(axis=0)
    else:
        pid = tl.program_id(axis=0).to(tl.int64)
    nc_stride = tl.num_programs(axis=1)
    NC = N * C
    nc_iter = tl.program_id(axis=1)
    pid = tl.program_id(axis=0)
    idx = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    ow = idx % OW
    oh = idx // OW % OH
    if SAME_H:
        ih = oh
    else:
        ih = tl.minimum((oh * reciprocal_scale_h).to(tl.int32), IH - 1)
    if SAME_W:
        iw = ow
    else:
        iw = tl.minimum((ow * reciprocal_scale_w).to(tl.int32), IW - 1)
    offset_o = (nc_iter * OH + oh) * OW + ow
    offset_i = (nc_iter * IH + ih) * IW + iw
    src_index_stride = nc_stride * IH * IW
    dst_index_stride = nc_stride * OH * OW
    while nc_iter < NC:
        data = tl.load(ptr_i + offset_i)
        tl.store(ptr_o + offset_o, data)
        ptr_i += src_index_stride
        ptr_o += dst_index_stride
        nc_iter += nc_stride


def _upsample(x, OH, OW):
    N, C, IH, IW = x.shape
    rh, rw = IH / OH, IW / OW
    out = np.full((N, C, OH, OW), -1, x.dtype)
    grid = lambda META: (-(-(OH * OW) // META["BLOCK_SIZE"]), -(-(N * C) // 4))  # noqa: E731
    upsample_nearest2d_kernel[grid](out, x, N, C, OH, OW, IH, IW, rh, rw)
    ih = np.minimum((np.arange(OH, dtype=np.float32) * np.float32(rh)).astype(np.int64), IH - 1)
    iw = np.minimum((np.arange(OW, dtype=np.float32) * np.float32(rw)).astype(np.int64), IW - 1)
    return out, x[:, :, ih][:, :, :, iw]


def check(rng):
    # N * C = 15 planes over 4 programs on axis 1; a 7 x 9 plane from 5 x 4 (odd scales)
    x = rng.standard_normal((3, 5, 5, 4)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    out, ref = _upsample(x, 7, 9)
    close(out, ref)
    # downsample in H, same width: SAME_W specialisation, int16 data
    y = rng.integers(-(2**15), 2**15 - 1, (2, 3, 11, 6)).astype(np.int16)
    out, ref = _upsample(y, 4, 6)
    close(out, ref)
