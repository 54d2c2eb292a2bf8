"""vLLM / SGLang style per-token-group FP8 quantization (DeepSeek-V3 block scales): each program
takes one group of ``group_size`` values, finds ``absmax`` with ``tl.max(tl.abs(..))`` floored by
``eps``, scales by ``fp8_max / absmax``, clamps with ``tl.clamp`` to ``[fp8_min, fp8_max]`` and
stores ``float8e4nv`` (e4m3fn) through the output pointer's element type, plus the fp32 scale
(int8 groups: sglang/per_token_group_quant_int8.py)."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _group_quant(y_ptr, y_q_ptr, y_s_ptr, y_stride, N, eps, fp8_min, fp8_max, BLOCK: tl.constexpr):
    g_id = tl.program_id(0)
    y_ptr += g_id * y_stride
    y_q_ptr += g_id * y_stride
    y_s_ptr += g_id
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    y = tl.load(y_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(y)), eps)
    y_s = absmax / fp8_max
    y_q = tl.clamp(y / y_s, fp8_min, fp8_max).to(y_q_ptr.dtype.element_ty)
    tl.store(y_q_ptr + cols, y_q, mask=mask)
    tl.store(y_s_ptr, y_s)


def check(rng):
    groups, group_size = 9, 48
    y = (rng.standard_normal((groups, group_size)) * rng.uniform(0.01, 50, (groups, 1))).astype(np.float16)
    y[2] = 0
    y[3, :4] = [np.float16(60000), np.float16(-60000), np.float16(1e-4), np.float16(-0.0)]
    fp8 = ml_dtypes.float8_e4m3fn
    fp8_max = float(ml_dtypes.finfo(fp8).max)
    eps = 1e-10
    y_q = np.empty((groups, group_size), fp8)
    y_s = np.empty(groups, np.float32)
    _group_quant[(groups,)](y, y_q, y_s, group_size, group_size, eps, -fp8_max, fp8_max, BLOCK=64)
    y32 = y.astype(np.float32)
    scale = (np.maximum(np.abs(y32).max(1), np.float32(eps)) / np.float32(fp8_max)).astype(np.float32)
    close(y_s, scale, rtol=1e-6, atol=0)
    q = np.clip(y32 / scale[:, None], -fp8_max, fp8_max).astype(fp8)
    close(y_q.view(np.uint8), q.view(np.uint8))
