"""Code choices (``Options.codegen``, read from ``TILES_*`` once per compile at the jit boundary):
flipping one between two compiles of the same kernel in one process gives a different artifact,
and flipping it back gives the first one from the cache, in memory and on disk."""

import re

import numpy as np
import pytest

import tiles
import tiles.language as tl
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
    return kernel.warmup(x, x, x, 100, BLOCK=128, backend="cuda").asm["ptx"]


def _mm_ptx(kernel):
    a, b, c = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16), np.ones((64, 64), np.float16)
    return kernel.warmup(a, b, c, BM=64, BN=64, BK=32, backend="cuda", num_warps=4).asm["ptx"]


CASES = [("TILES_APPROX_DIV", quotients, _division_ptx, lambda ptx: "div.full.f32" in ptx),
         ("TILES_STMATRIX", mm16, _mm_ptx, lambda ptx: "stmatrix" in ptx)]


@pytest.mark.parametrize("var,kernel,ptx_of,taken", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("disk", [False, True])
def test_flipping_a_choice_mid_process_recompiles(monkeypatch, tmp_path, var, kernel, ptx_of, taken, disk):
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "0" if disk else "1")
    monkeypatch.delenv(var, raising=False)
    fresh = tiles.jit(kernel.fn)  # an empty in-memory cache
    on = ptx_of(fresh)
    assert taken(on)
    monkeypatch.setenv(var, "0")
    off = ptx_of(fresh if not disk else tiles.jit(kernel.fn))
    assert not taken(off), f"{var}=0 set mid-process: the cached code of {var}=1 came back"
    monkeypatch.delenv(var)
    hits = cache.STATS["hits"]
    assert ptx_of(fresh) == on  # the first one, from the in-memory cache
    if disk:
        assert ptx_of(tiles.jit(kernel.fn)) == on and cache.STATS["hits"] == hits + 1
        assert re.search(r"\.entry \w+", on)
