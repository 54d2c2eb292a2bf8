"""SGLang style per-token-group int8 quantization: per group of ``group_size`` values the absmax
(``tl.max(tl.abs(..))`` floored by ``eps``) gives the scale ``absmax / 127``; values are rounded
half-to-even with ``libdevice.rint``, clamped with ``tl.clamp`` to [-128, 127] as floats and
converted to int8; fp16 input with zero groups, huge values and -0.0."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice


@tiles.jit
def _group_quant_int8(y_ptr, y_q_ptr, y_s_ptr, y_stride, N, eps, BLOCK: tl.constexpr):
    g_id = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    y = tl.load(y_ptr + g_id * y_stride + cols, mask=mask, other=0.0).to(tl.float32)
    y_s = tl.maximum(tl.max(tl.abs(y)), eps) / 127.0
    y_q = tl.clamp(libdevice.rint(y / y_s), -128.0, 127.0).to(tl.int8)
    tl.store(y_q_ptr + g_id * y_stride + cols, y_q, mask=mask)
    tl.store(y_s_ptr + g_id, y_s)



def check(rng):
    groups, group_size = 9, 48
    y = (rng.standard_normal((groups, group_size)) * rng.uniform(0.01, 50, (groups, 1))).astype(np.float16)
    y[2] = 0
    y[3, :4] = [np.float16(60000), np.float16(-60000), np.float16(1e-4), np.float16(-0.0)]
    y[4, :3] = [np.float16(127), np.float16(0.5), np.float16(-1.5)]
    eps = 1e-10
    y_q = np.empty((groups, group_size), np.int8)
    y_s = np.empty(groups, np.float32)
    _group_quant_int8[(groups,)](y, y_q, y_s, group_size, group_size, eps, BLOCK=64)
    y32 = y.astype(np.float32)
    scale = (np.maximum(np.abs(y32).max(1), np.float32(eps)) / np.float32(127)).astype(np.float32)
    close(y_s, scale, rtol=1e-6, atol=0)
    close(y_q, np.clip(np.rint(y32 / scale[:, None]), -128, 127).astype(np.int8))
