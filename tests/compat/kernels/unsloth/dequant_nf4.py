"""Unsloth / bitsandbytes style NF4 dequantization written in Triton: packed uint8 bytes split
into high and low nibbles with ``>>`` and ``&``, the 16-entry codebook looked up with
``tl.gather`` from a loaded tile, a per-block absmax that is itself int8-quantized (double
quantization: ``code2[q] * absmax2[block] + offset``), the two nibbles put back in order with
``tl.interleave`` and stored as fp16/bf16 chosen by the output pointer."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982217597961, 0.5626170039176941,
                0.7229568362236023, 1.0], np.float32)


@tiles.jit
def _dequant_nf4(packed_ptr, code_ptr, absmax_q_ptr, code2_ptr, absmax2_ptr, offset, out_ptr, n_bytes,
                 BLOCKSIZE: tl.constexpr, BLOCKSIZE2: tl.constexpr, BYTES: tl.constexpr):
    pid = tl.program_id(0)
    byte_offs = pid * BYTES + tl.arange(0, BYTES)
    ok = byte_offs < n_bytes
    packed = tl.load(packed_ptr + byte_offs, mask=ok, other=0)
    high = (packed >> 4).to(tl.int32)
    low = (packed & 0xF).to(tl.int32)
    code = tl.load(code_ptr + tl.arange(0, 16))
    hi_val = tl.gather(code, high, 0)
    lo_val = tl.gather(code, low, 0)
    block = (byte_offs * 2) // BLOCKSIZE
    q = tl.load(absmax_q_ptr + block, mask=ok, other=0).to(tl.int32) + 128
    absmax = tl.load(code2_ptr + q) * tl.load(absmax2_ptr + block // BLOCKSIZE2, mask=ok, other=0.0) + offset
    values = tl.interleave(hi_val * absmax, lo_val * absmax)
    out_offs = pid * 2 * BYTES + tl.arange(0, 2 * BYTES)
    tl.store(out_ptr + out_offs, values.to(out_ptr.dtype.element_ty), mask=out_offs < 2 * n_bytes)


def check(rng):
    n_values, blocksize, blocksize2 = 1000, 64, 4
    n_bytes = n_values // 2
    n_blocks = tiles.cdiv(n_values, blocksize)
    nibbles = rng.integers(0, 16, n_values).astype(np.uint8)
    nibbles[:4] = [0, 15, 15, 0]
    packed = (nibbles[0::2] << 4) | nibbles[1::2]
    code2 = np.sort(rng.uniform(-1, 1, 256)).astype(np.float32)
    absmax_q = rng.integers(-128, 128, n_blocks).astype(np.int8)
    absmax2 = rng.uniform(0.5, 2.0, tiles.cdiv(n_blocks, blocksize2)).astype(np.float32)
    offset = 0.25
    second_level = absmax2[np.arange(n_blocks) // blocksize2]
    block_scale = code2[absmax_q.astype(np.int32) + 128] * second_level + np.float32(offset)
    expected = NF4[nibbles] * block_scale[np.arange(n_values) // blocksize]
    for dtype in (np.float16, ml_dtypes.bfloat16):
        out = np.empty(n_values, dtype)
        _dequant_nf4[(tiles.cdiv(n_bytes, 128),)](packed, NF4, absmax_q, code2, absmax2, offset, out, n_bytes,
                                                  BLOCKSIZE=blocksize, BLOCKSIZE2=blocksize2, BYTES=128)
        close(out, expected.astype(dtype), rtol=1e-2, atol=1e-3)
