"""FlagGems style grouped ``conv2d`` forward as an implicit GEMM: rows are flattened (n, ho, wo)
positions, columns output channels of one group, and the reduction walks (kh, kw, ci-block) in a
single flat ``range`` with ``tl.dot(..., allow_tf32=False)``.

Language features exercised: pointer *arguments* turned into 2-D pointer tiles by augmented
assignment with broadcast offsets (``input_pointer += (...)[:, None]``) before the loop; the
0-d program id indexed ``pid_group[None]`` then ``[None, :]``; comparisons written literal-first
(``0 <= input_height_offset``); masks built from six ``[:, None]``/``[None, :]`` factors; a plain
local computed from constexprs (``BLOCK_CI_COUNT = (weight_c + BLOCK_CI - 1) // BLOCK_CI``) as a
``range`` bound; the deprecated ``allow_tf32=False`` keyword of ``tl.dot``; masked loads *without*
``other`` feeding the dot (FlagGems relies on them reading zero for the padding); a positional
mask in ``tl.load(bias_pointer, mask_bias)``; ``@autotune`` keyed on fourteen arguments, with
``groups=`` passed by keyword; a 3-D grid lambda reading two tile sizes from ``meta``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.autotune(
    configs=[tiles.Config({"BLOCK_NI_HO_WO": 16, "BLOCK_CI": 16, "BLOCK_CO": 16}, num_warps=4),
             tiles.Config({"BLOCK_NI_HO_WO": 32, "BLOCK_CI": 16, "BLOCK_CO": 16}, num_warps=4)],
    key=["in_n", "weight_c", "input_height", "input_width", "out_c", "out_height", "out_width", "weight_height",
         "weight_width", "stride_height", "stride_width", "padding_height", "padding_width", "groups"],
)
@tiles.jit
def conv2d_forward_kernel(
    input_pointer, weight_pointer, output_pointer, bias_pointer,
    in_n, input_height, input_width, out_c, out_height, out_width,
    input_n_stride, input_c_stride, input_height_stride, input_width_stride,
    weight_n_stride, weight_c_stride, weight_height_stride, weight_width_stride,
    output_n_stride, output_c_stride, output_height_stride, output_width_stride,
    weight_c: tl.constexpr, weight_height: tl.constexpr, weight_width: tl.constexpr,
    stride_height: tl.constexpr, stride_width: tl.constexpr,
    padding_height: tl.constexpr, padding_width: tl.constexpr,
    dilation_height: tl.constexpr, dilation_width: tl.constexpr,
    groups: tl.constexpr,
    BLOCK_NI_HO_WO: tl.constexpr, BLOCK_CI: tl.constexpr, BLOCK_CO: tl.constexpr,
):
    pid_ni_ho_wo = tl.program_id(0)
    pid_co = tl.program_id(1)
    pid_group = tl.program_id(2)
    ni_ho_wo_offset = pid_ni_ho_wo * BLOCK_NI_HO_WO + tl.arange(0, BLOCK_NI_HO_WO)
    ni_ho_offset = ni_ho_wo_offset // out_width
    in_n_point_value = ni_ho_offset // out_height
    output_height_point_value = ni_ho_offset % out_height
    output_width_point_value = ni_ho_wo_offset % out_width

    out_per_group_c = out_c // groups
    output_c_offset = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    input_pointer += (input_n_stride * in_n_point_value + input_c_stride * pid_group * weight_c)[:, None]
    weight_pointer += (weight_n_stride * output_c_offset + weight_n_stride * pid_group * out_per_group_c)[None, :]

    accum = tl.zeros((BLOCK_NI_HO_WO, BLOCK_CO), dtype=tl.float32)
    BLOCK_CI_COUNT = (weight_c + BLOCK_CI - 1) // BLOCK_CI
    for hwc in range(weight_height * weight_width * BLOCK_CI_COUNT):
        c = (hwc % BLOCK_CI_COUNT) * BLOCK_CI
        hw = hwc // BLOCK_CI_COUNT
        h = hw // weight_width
        w = hw % weight_width
        input_c_offset = c + tl.arange(0, BLOCK_CI)
        input_height_offset = h * dilation_height - padding_height + stride_height * output_height_point_value
        input_width_offset = w * dilation_width - padding_width + stride_width * output_width_point_value
        curr_input_pointer = (input_pointer + (input_c_stride * input_c_offset)[None, :]
                              + (input_height_stride * input_height_offset)[:, None]
                              + (input_width_stride * input_width_offset)[:, None])
        curr_weight_pointer = (weight_pointer + (weight_c_stride * input_c_offset)[:, None]
                               + (weight_height_stride * h) + (weight_width_stride * w))
        input_mask = ((in_n_point_value < in_n)[:, None] & (input_c_offset < weight_c)[None, :]
                      & (0 <= input_height_offset)[:, None] & (input_height_offset < input_height)[:, None]
                      & (0 <= input_width_offset)[:, None] & (input_width_offset < input_width)[:, None])
        weight_mask = (input_c_offset < weight_c)[:, None] & (output_c_offset < out_per_group_c)[None, :]
        input_block = tl.load(curr_input_pointer, mask=input_mask)
        weight_block = tl.load(curr_weight_pointer, mask=weight_mask)
        accum += tl.dot(input_block, weight_block, allow_tf32=False)
    bias_pointer += (pid_group[None] * out_per_group_c)[None, :] + output_c_offset[None, :]
    mask_bias = (output_c_offset < out_per_group_c)[None, :]
    accum += tl.load(bias_pointer, mask_bias).to(tl.float32)
    output_pointer += ((output_n_stride * in_n_point_value)[:, None]
                       + (output_c_stride * (pid_group * out_per_group_c + output_c_offset))[None, :]
                       + (output_height_stride * output_height_point_value)[:, None]
                       + (output_width_stride * output_width_point_value)[:, None])
    output_mask = ((in_n_point_value < in_n)[:, None] & (output_c_offset < out_per_group_c)[None, :]
                   & (output_height_point_value < out_height)[:, None]
                   & (output_width_point_value < out_width)[:, None])
    tl.store(output_pointer, accum, mask=output_mask)


def _conv_ref(x, wt, b, stride, pad, dil, groups):
    N, C, H, W = x.shape
    CO, CI, KH, KW = wt.shape
    OH = (H + 2 * pad[0] - dil[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (W + 2 * pad[1] - dil[1] * (KW - 1) - 1) // stride[1] + 1
    xp = np.zeros((N, C, H + 2 * pad[0], W + 2 * pad[1]))
    xp[:, :, pad[0]:pad[0] + H, pad[1]:pad[1] + W] = x
    out = np.zeros((N, CO, OH, OW))
    per = CO // groups
    for g in range(groups):
        xs = xp[:, g * CI:(g + 1) * CI]
        for kh in range(KH):
            for kw in range(KW):
                hs = kh * dil[0]
                ws = kw * dil[1]
                patch = xs[:, :, hs:hs + stride[0] * OH:stride[0], ws:ws + stride[1] * OW:stride[1]]
                out[:, g * per:(g + 1) * per] += np.einsum("nchw,oc->nohw", patch, wt[g * per:(g + 1) * per, :, kh, kw])
    return out + b[None, :, None, None]


def check(rng):
    N, groups, CI, H, W, CO, KH, KW = 2, 2, 3, 7, 6, 10, 3, 2
    stride, pad, dil = (2, 1), (1, 0), (1, 2)
    x = rng.standard_normal((N, groups * CI, H, W)).astype(np.float32)
    wt = rng.standard_normal((CO, CI, KH, KW)).astype(np.float32)
    b = rng.standard_normal(CO).astype(np.float32)
    ref = _conv_ref(x.astype(np.float64), wt.astype(np.float64), b.astype(np.float64), stride, pad, dil, groups)
    OH, OW = ref.shape[2:]
    out = np.full((N, CO, OH, OW), np.nan, np.float32)
    st = lambda a: [s // a.itemsize for s in a.strides]  # noqa: E731
    grid = lambda meta: (tiles.cdiv(N * OH * OW, meta["BLOCK_NI_HO_WO"]),  # noqa: E731
                         tiles.cdiv(CO // groups, meta["BLOCK_CO"]), groups)
    conv2d_forward_kernel[grid](x, wt, out, b, N, H, W, CO, OH, OW, *st(x), *st(wt), *st(out), CI, KH, KW, *stride,
                                *pad, *dil, groups=groups)
    close(out, ref, rtol=1e-4, atol=1e-4)
