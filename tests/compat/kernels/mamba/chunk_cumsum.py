"""mamba2 (SSD) style chunked ``dt`` preprocessing: a [BLOCK_H, BLOCK_CHUNK] tile read *across*
the time-major input (heads on rows), ``dt_bias`` added, softplus where ``dt <= 20``, then
``tl.clamp(dt, dt_min, dt_max)`` with float arguments, padding zeroed with ``tl.where``, and the
decay ``dt * A`` summed along the chunk with ``tl.cumsum(..., axis=1)``; grid (batch, chunk,
head block), with libdevice ``log1p`` for the softplus."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice


@tiles.jit
def _chunk_cumsum(dt_ptr, A_ptr, bias_ptr, dt_out_ptr, dA_cumsum_ptr, seqlen, nheads, chunk_size, dt_min, dt_max,
                  s_dt_b, s_dt_s, s_dt_h, s_out_b, s_out_h, s_out_c, HAS_BIAS: tl.constexpr,
                  DT_SOFTPLUS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_CHUNK: tl.constexpr):
    pid_b = tl.program_id(axis=0)
    pid_c = tl.program_id(axis=1)
    pid_h = tl.program_id(axis=2)
    dt_ptr += pid_b * s_dt_b + pid_c * chunk_size * s_dt_s
    dt_out_ptr += pid_b * s_out_b + pid_c * s_out_c
    dA_cumsum_ptr += pid_b * s_out_b + pid_c * s_out_c
    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_c = tl.arange(0, BLOCK_CHUNK)
    limit = min(chunk_size, seqlen - pid_c * chunk_size)
    head_ok = offs_h < nheads
    tile_ok = head_ok[:, None] & (offs_c[None, :] < limit)
    dt = tl.load(dt_ptr + offs_h[:, None] * s_dt_h + offs_c[None, :] * s_dt_s, mask=tile_ok, other=0.0).to(tl.float32)
    if HAS_BIAS:
        dt += tl.load(bias_ptr + offs_h, mask=head_ok, other=0.0).to(tl.float32)[:, None]
    if DT_SOFTPLUS:
        dt = tl.where(dt <= 20.0, libdevice.log1p(tl.exp(dt)), dt)
    dt = tl.clamp(dt, dt_min, dt_max)
    dt = tl.where(tile_ok, dt, 0.0)
    out_offs = offs_h[:, None] * s_out_h + offs_c[None, :]
    out_ok = head_ok[:, None] & (offs_c[None, :] < chunk_size)
    tl.store(dt_out_ptr + out_offs, dt, mask=out_ok)
    A = tl.load(A_ptr + offs_h, mask=head_ok, other=0.0).to(tl.float32)
    tl.store(dA_cumsum_ptr + out_offs, tl.cumsum(dt * A[:, None], axis=1), mask=out_ok)


def check(rng):
    batch, seqlen, nheads, chunk = 2, 45, 5, 16
    nchunks = tiles.cdiv(seqlen, chunk)
    dt = (rng.standard_normal((batch, seqlen, nheads)) * 3).astype(np.float32)
    dt[0, :3, 0] = [30.0, -40.0, 20.0]
    A = -rng.uniform(0.5, 2, nheads).astype(np.float32)
    bias = rng.standard_normal(nheads).astype(np.float32)
    dt_min, dt_max = 0.01, 4.0
    dt_out = np.full((batch, nheads, nchunks, chunk), np.nan, np.float32)
    dA = np.full_like(dt_out, np.nan)
    grid = (batch, nchunks, tiles.cdiv(nheads, 4))
    _chunk_cumsum[grid](dt, A, bias, dt_out, dA, seqlen, nheads, chunk, dt_min, dt_max,
                        stride(dt, 0), stride(dt, 1), stride(dt, 2), stride(dt_out, 0), stride(dt_out, 1),
                        stride(dt_out, 2), HAS_BIAS=True, DT_SOFTPLUS=True, BLOCK_H=4, BLOCK_CHUNK=16)
    x = dt.astype(np.float64) + bias
    x = np.where(x <= 20, np.log1p(np.exp(np.minimum(x, 20))), x)
    x = np.clip(x, dt_min, dt_max)
    padded = np.zeros((batch, nchunks * chunk, nheads))
    padded[:, :seqlen] = x
    expected = padded.reshape(batch, nchunks, chunk, nheads).transpose(0, 3, 1, 2)
    close(dt_out, expected, rtol=1e-5, atol=1e-6)
    close(dA, np.cumsum(expected * A[None, :, None, None], -1), rtol=1e-5, atol=1e-5)
