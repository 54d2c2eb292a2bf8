"""Code choices (``Options.codegen``, read from ``TILES_*`` once per compile at the jit boundary):
flipping one between two compiles of the same kernel in one process gives a different artifact,
and flipping it back gives the first one from the cache, in memory and on disk."""


import dataclasses

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles import config
from tiles.runtime import cache


@tiles.jit
def quotients(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x / y, mask=offs < n)


@tiles.jit
def mm16(a, b, c, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(a + rm[:, None] * BK + rk[None, :])
    y = tl.load(b + rk[:, None] * BN + rn[None, :])
    tl.store(c + rm[:, None] * BN + rn[None, :], tl.dot(x, y).to(tl.float16))


def _division_ptx(kernel):
    x = np.ones(100, np.float32)
    return kernel.warmup(x, x, x, 100, BLOCK=128, backend="cuda")


def _mm_ptx(kernel):
    a, b, c = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16), np.ones((64, 64), np.float16)
    return kernel.warmup(a, b, c, BM=64, BN=64, BK=32, backend="cuda", num_warps=4)


def _attention_ptx(kernel):
    from test_tma_producer import _attention_args
    (q, k, v), o, strides = _attention_args(np.random.default_rng(5), 1, 2, 256, 128)
    return kernel.warmup(q, k, v, o, 0.125, *strides, 2, 256, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128,
                         CAUSAL=False, num_warps=8, num_stages=2, backend="cuda", grid=(1,))


def _block_attention():
    from test_tma_producer import block_attention
    return block_attention


CASES = [("TILES_APPROX_DIV", lambda: quotients, _division_ptx, lambda c: "div.full.f32" in c.asm["ptx"]),
         ("TILES_STMATRIX", lambda: mm16, _mm_ptx, lambda c: "stmatrix" in c.asm["ptx"]),
         ("TILES_PERSISTENT", _block_attention, _attention_ptx, lambda c: bool(c.persistent))]


@pytest.mark.parametrize("var,kernel,compiled_of,taken", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("disk", [False, True])
def test_flipping_a_choice_mid_process_recompiles(monkeypatch, tmp_path, var, kernel, compiled_of, taken, disk):
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "0" if disk else "1")
    for name in config.CODE_CHOICES:
        monkeypatch.delenv(name, raising=False)
    kernel = kernel()
    fresh = tiles.jit(kernel.fn)  # an empty in-memory cache
    on = compiled_of(fresh)
    assert taken(on)
    monkeypatch.setenv(var, "0")
    off = compiled_of(fresh if not disk else tiles.jit(kernel.fn))
    assert not taken(off), f"{var}=0 set mid-process: the cached code of {var}=1 came back"
    assert off.asm["ptx"] != on.asm["ptx"]
    monkeypatch.delenv(var)
    assert compiled_of(fresh) is on  # the first one, from the in-memory cache
    if disk:
        hits = cache.STATS["hits"]
        again = compiled_of(tiles.jit(kernel.fn))  # the first one, from the disk cache
        assert again.asm["ptx"] == on.asm["ptx"] and cache.STATS["hits"] == hits + 1


def _specs(kernel, args, constexprs):
    return kernel.specialize(kernel._bind(args, constexprs))


def test_every_choice_is_in_the_in_memory_key(monkeypatch):
    """Options that differ in any one code choice never share a compiled kernel: each one off
    compiles anew, and each is found again afterwards."""
    from tiles.backends import registry
    from tiles.backends.base import CodegenChoices
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    cuda = registry.get("cuda")
    fresh = tiles.jit(quotients.fn)
    x = np.ones(100, np.float32)
    specs = _specs(fresh, (x, x, x, 100), {"BLOCK": 128})
    base = fresh._options(cuda, 4, 3)
    names = [f for f in CodegenChoices.__dataclass_fields__]

    def flipped(name):  # each choice the other way (off, or on for those off by default)
        return dataclasses.replace(base, codegen=dataclasses.replace(
            base.codegen, **{name: not getattr(base.codegen, name)}))
    compiled = {name: fresh.compile_for(specs, cuda, flipped(name)) for name in names}
    first = fresh.compile_for(specs, cuda, base)
    assert len({id(c) for c in [first, *compiled.values()]}) == len(names) + 1
    assert all(fresh.compile_for(specs, cuda, flipped(n)) is compiled[n] for n in names)
    assert fresh.compile_for(specs, cuda, base) is first
    # TILES_OCCUPANCY's choice reaches the loader with the kernel (cuda/occupancy.py: no second load)
    assert not cuda._loaded(compiled["occupancy"]).occupancy and cuda._loaded(first).occupancy


def _attention_case(bn=128, stages=2):
    from test_tma_producer import _attention_args, block_attention
    (q, k, v), o, strides = _attention_args(np.random.default_rng(5), 1, 2, 256, 128)
    return block_attention, (q, k, v, o, 0.125, *strides, 2, 256), \
        dict(HEAD_DIM=128, BLOCK_M=128, BLOCK_N=bn, CAUSAL=False), 8, stages


def _desc_copy_case():
    from test_tma import _copy_args, desc_copy
    return desc_copy, _copy_args(64, 64), dict(BM=32, BN=64), 4, 3


FLIPS = [
    ("approx_div", lambda: (quotients, (np.ones(100, np.float32),) * 3 + (100,), dict(BLOCK=128), 4, 3),
     lambda c: "div.full.f32" in c.asm["ptx"]),
    ("stmatrix", lambda: (mm16, (np.ones((64, 32), np.float16), np.ones((32, 64), np.float16),
                                 np.ones((64, 64), np.float16)), dict(BM=64, BN=64, BK=32), 4, 3),
     lambda c: "stmatrix" in c.asm["ptx"]),
    ("tma", _desc_copy_case, lambda c: "cp.async.bulk.tensor" in c.asm["ptx"]),
    ("producer", _attention_case, lambda c: "setmaxnreg" in c.asm["ptx"]),
    ("persistent", _attention_case, lambda c: bool(c.persistent)),
    ("tma_top_loads", _attention_case, lambda c: 0 in {m["base"] for m in c.tensor_maps}),
    # (kept there by ptxas's register count, with TMA off: cuda/choices.py)
    ("inflight", lambda: _attention_case(64, 3), lambda c: "wgmma.wait_group.sync.aligned 1" in c.asm["ptx"]),
]
ALSO_OFF = {"inflight": ("tma",)}


@pytest.mark.skipif(not __import__("shutil").which("ptxas"), reason="the producer is kept only where ptxas says so")
@pytest.mark.parametrize("name,case,taken", FLIPS, ids=[f[0] for f in FLIPS])
def test_each_choice_flipped_through_options(monkeypatch, name, case, taken):
    """Each code choice off (``Options.without``) gives a different artifact; on again, the first
    one comes back from the cache."""
    from tiles.backends import registry
    for var in config.CODE_CHOICES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    cuda = registry.get("cuda")
    kernel, args, constexprs, warps, stages = case()
    fresh = tiles.jit(kernel.fn)
    specs = _specs(fresh, args, constexprs)
    on = fresh._options(cuda, warps, stages).without(*ALSO_OFF.get(name, ()))
    with_it = fresh.compile_for(specs, cuda, on)
    without = fresh.compile_for(specs, cuda, on.without(name))
    assert taken(with_it) and not taken(without)
    assert fresh.compile_for(specs, cuda, on) is with_it
