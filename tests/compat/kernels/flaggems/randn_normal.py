"""FlagGems style ``torch.randn`` / ``torch.normal``: Philox on a 64-bit (seed, offset) pair split into
counter halves, four uniforms per counter turned into four normals by Box-Muller, each of the four
streams written to its own quarter of the program's span; then a pointwise ``val * std + mean``
with a tensor ``std`` and a float ``mean``.

Language features exercised: ``tl.pair_uniform_to_normal`` and ``tl.uint_to_uniform_float`` bound
to *module globals* (``pair_uniform_to_normal = tl.pair_uniform_to_normal``, as FlagGems does with
an ``AttributeError`` fallback) and called from a kernel; ``@jit(do_not_specialize=[...])`` on the
seed and offset; ``philox_seed.to(tl.int64)`` on scalar arguments, ``(off & 0xFFFFFFFF).to(tl.uint32)``
and ``(off >> 32)`` halves; ``c0 += i4`` (uint32 plus int32 tile); a zero counter from ``c0 * 0``;
``tl.philox(seed, c0, c1, _O, _O)`` returning four tiles; ``eviction_policy="evict_first"`` stores;
a ``@heuristics`` block size; a pointwise kernel whose float argument is annotated ``val0: float``
(Triton's annotation for a runtime fp32 scalar)."""

import numpy as np
from compat_harness import close
from compat_random import philox, uniform

import tiles
import tiles.language as tl

try:
    pair_uniform_to_normal = tl.pair_uniform_to_normal
except AttributeError:  # pragma: no cover - the fallback FlagGems keeps for old Triton

    @tiles.jit
    def pair_uniform_to_normal(u1, u2):
        u1 = tl.maximum(1.0e-7, u1)
        th = 6.283185307179586 * u2
        r = tl.sqrt(-2.0 * tl.log(u1))
        return r * tl.cos(th), r * tl.sin(th)


uint_to_uniform_float = tl.uint_to_uniform_float


@tiles.heuristics({"BLOCK": lambda args: 64 if args["N"] < 4096 else 1024})
@tiles.jit(do_not_specialize=["philox_seed", "philox_offset"])
def randn_kernel(out_ptr, N, philox_seed, philox_offset, BLOCK: tl.constexpr):
    philox_seed = philox_seed.to(tl.int64)
    philox_offset = philox_offset.to(tl.int64)
    c0 = (philox_offset & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((philox_offset >> 32) & 0xFFFFFFFF).to(tl.uint32)
    i4 = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c0 += i4
    _O = c0 * 0
    r0, r1, r2, r3 = tl.philox(philox_seed, c0, c1, _O, _O)
    r0 = uint_to_uniform_float(r0)
    r1 = uint_to_uniform_float(r1)
    r2 = uint_to_uniform_float(r2)
    r3 = uint_to_uniform_float(r3)
    n0, n1 = pair_uniform_to_normal(r0, r1)
    n2, n3 = pair_uniform_to_normal(r2, r3)
    off_0 = tl.program_id(0) * BLOCK * 4 + tl.arange(0, BLOCK)
    off_1 = off_0 + BLOCK
    off_2 = off_1 + BLOCK
    off_3 = off_2 + BLOCK
    tl.store(out_ptr + off_0, n0, mask=off_0 < N, eviction_policy="evict_first")
    tl.store(out_ptr + off_1, n1, mask=off_1 < N, eviction_policy="evict_first")
    tl.store(out_ptr + off_2, n2, mask=off_2 < N, eviction_policy="evict_first")
    tl.store(out_ptr + off_3, n3, mask=off_3 < N, eviction_policy="evict_first")


@tiles.jit
def transform_func_tensor_float(val, std, mean):
    return val * std + mean


@tiles.jit
def _transform_rank_1(in0_ptr: tl.tensor, in1_ptr: tl.tensor, val0: float, out0_ptr: tl.tensor, s0: int,
                      tile_size: tl.constexpr):
    offs = tl.program_id(0) * tile_size + tl.arange(0, tile_size)
    mask = offs < s0
    in0 = tl.load(in0_ptr + offs, mask=mask).to(in0_ptr.type.element_ty)
    in1 = tl.load(in1_ptr + offs, mask=mask).to(in1_ptr.type.element_ty)
    out0 = transform_func_tensor_float(in0, in1, val0)
    tl.store(out0_ptr + offs, out0.to(out0_ptr.type.element_ty), mask=mask)


def _normal_ref(u1, u2):
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    return r * np.cos(th), r * np.sin(th)


def check(rng):
    N = 1000
    seed = int(rng.integers(1, 2**62))
    offset = (2**32 - 64) + 4 * int(rng.integers(0, 8))  # counter low half wraps inside the launch
    out = np.full(N, np.nan, np.float32)
    grid = lambda meta: (tiles.cdiv(N, meta["BLOCK"] * 4),)  # noqa: E731
    randn_kernel[grid](out, N, seed, offset)
    block = 64
    programs = -(-N // (block * 4))
    idx = np.arange(programs * block)
    c0 = ((offset & 0xFFFFFFFF) + idx) & 0xFFFFFFFF
    c1 = np.full_like(idx, (offset >> 32) & 0xFFFFFFFF)
    u = [uniform(s) for s in philox(seed, c0, c1, 0, 0)]
    n0, n1 = _normal_ref(u[0], u[1])
    n2, n3 = _normal_ref(u[2], u[3])
    expect = np.stack([n.reshape(programs, block) for n in (n0, n1, n2, n3)], 1).reshape(-1)[:N]
    close(out, expect, rtol=1e-4, atol=1e-4)
    assert abs(out.mean()) < 0.2 and 0.8 < out.std() < 1.2

    std = (rng.random(N) * 2).astype(np.float32)
    res = np.empty(N, np.float32)
    _transform_rank_1[(tiles.cdiv(N, 256),)](out, std, -1.5, res, N, tile_size=256)
    close(res, out * std + np.float32(-1.5), rtol=1e-6, atol=1e-6)
