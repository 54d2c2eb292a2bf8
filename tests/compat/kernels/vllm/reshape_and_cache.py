"""vLLM style ``reshape_and_cache_flash``: each token's K and V rows are written into a paged
cache at the slot ``slot_mapping[token]`` (int64; ``-1`` marks padding, which returns early),
page ``slot // block_size`` and offset ``slot % block_size``; with an fp8 cache the values are
divided by a scale loaded from a one-element tensor and stored as ``float8e4nv``."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _reshape_and_cache(key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_mapping_ptr, k_scale, v_scale,
                       key_stride, value_stride, block_stride, page_stride, block_size,
                       HEAD_SIZE: tl.constexpr, NUM_HEADS: tl.constexpr, TILE: tl.constexpr, FP8: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_mapping_ptr + token)
    if slot < 0:
        return
    block = slot // block_size
    offset = slot % block_size
    width = NUM_HEADS * HEAD_SIZE
    cols = tl.arange(0, TILE)
    mask = cols < width
    k = tl.load(key_ptr + token * key_stride + cols, mask=mask)
    v = tl.load(value_ptr + token * value_stride + cols, mask=mask)
    if FP8:
        k = (k.to(tl.float32) / tl.load(k_scale)).to(key_cache_ptr.dtype.element_ty)
        v = (v.to(tl.float32) / tl.load(v_scale)).to(value_cache_ptr.dtype.element_ty)
    dest = block * block_stride + offset * page_stride + cols
    tl.store(key_cache_ptr + dest, k, mask=mask)
    tl.store(value_cache_ptr + dest, v, mask=mask)


def check(rng):
    tokens, heads, head_size, blocks, block_size = 9, 3, 20, 5, 4
    key = rng.standard_normal((tokens, heads, head_size)).astype(np.float16)
    value = rng.standard_normal((tokens, heads, head_size)).astype(np.float16)
    slots = rng.permutation(blocks * block_size)[:tokens].astype(np.int64)
    slots[[2, 7]] = -1
    live = slots >= 0
    for fp8 in (False, True):
        dtype = ml_dtypes.float8_e4m3fn if fp8 else np.float16
        k_cache = np.full((blocks, block_size, heads, head_size), 3, dtype)
        v_cache = np.full((blocks, block_size, heads, head_size), 3, dtype)
        k_scale = np.array([0.05], np.float32)
        v_scale = np.array([0.02], np.float32)
        _reshape_and_cache[(tokens,)](key, value, k_cache, v_cache, slots, k_scale, v_scale, heads * head_size,
                                      heads * head_size, block_size * heads * head_size, heads * head_size,
                                      block_size, HEAD_SIZE=head_size, NUM_HEADS=heads, TILE=64, FP8=fp8)
        expect_k = np.full(k_cache.shape, 3, dtype)
        expect_v = np.full(v_cache.shape, 3, dtype)
        k_src = key[live].astype(np.float32) / k_scale[0] if fp8 else key[live]
        v_src = value[live].astype(np.float32) / v_scale[0] if fp8 else value[live]
        expect_k[slots[live] // block_size, slots[live] % block_size] = k_src.astype(dtype)
        expect_v[slots[live] // block_size, slots[live] % block_size] = v_src.astype(dtype)
        close(k_cache.view(np.uint8), expect_k.view(np.uint8))
        close(v_cache.view(np.uint8), expect_v.view(np.uint8))
