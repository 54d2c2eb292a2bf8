"""The store of a tensor-core tile through pointers whose alignment is unknown or small (a grouped
GEMM: C's address and leading dimension loaded from memory).  Such a store is written from a
layout whose chunks are as wide as the alignment allows, lanes consecutive along a row, so each
warp instruction covers one contiguous run (``lowering/mma/epilogue.py``); a store whose alignment
is promised keeps 16-byte chunks.  Checked on the PTX (access widths) and on the simulator
(values, masks, and the addresses each warp instruction touches)."""

import re

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel


@tiles.jit
def grouped_f16(a_addrs, b_addrs, c_addrs, sizes, lds, group_size, pool, NUM_PROGRAMS: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ALIGN: tl.constexpr):
    tile = tl.program_id(0)
    first = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        if ALIGN > 2:  # C's rows end on ALIGN-byte boundaries: the column mask is constant in such runs
            n = tl.multiple_of(n, ALIGN // 2)
        tiles_n = tl.cdiv(n, BN)
        count = tl.cdiv(m, BM) * tiles_n
        while tile >= first and tile < first + count:
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            a = tl.load(a_addrs + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_addrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_addrs + g).to(tl.pointer_type(tl.float16))
            if ALIGN > 2:  # C's base and rows promised ALIGN-byte aligned
                c = tl.multiple_of(c, ALIGN)
                ldc = tl.multiple_of(ldc, ALIGN // 2)
            local = tile - first
            rm = (local // tiles_n) * BM + tl.arange(0, BM)
            rn = (local % tiles_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a_ptrs = a + rm[:, None] * lda + rk[None, :]
            b_ptrs = b + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for _kk in range(0, tl.cdiv(k, BK)):
                tl.multiple_of(a_ptrs, [16, 16])
                tl.multiple_of(b_ptrs, [16, 16])
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BK
                b_ptrs += BK * ldb
            tl.store(c + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16),
                     mask=(rm[:, None] < m) & (rn[None, :] < n))
            tile += NUM_PROGRAMS
        first += count


BM, BN, BK, WARPS = 64, 64, 32, 4
THREADS = 32 * WARPS

def problems(align):
    """(m, n, k) of each group: edges masked in m and n; n a multiple of the promised alignment."""
    return [(72, 100, 64), (50, 37, 96), (64, 64, 32)] if align == 2 else [(72, 104, 64), (50, 40, 96), (64, 64, 32)]


SENTINEL = np.float16(-7.0)


def _pad(x, to):
    return -(-x // to) * to


def _case(seed, align):
    """A pool of float16 holding every problem's A (rows padded to BM), B (columns padded to BN)
    and C (leading dimension ``ldc`` and base aligned to ``align`` bytes only, not more)."""
    rng = np.random.default_rng(seed)
    step = align // 2  # elements
    places, mats, lds, at = [], [], [], 0
    for m, n, k in problems(align):
        mp, np_ = _pad(m, BM), _pad(n, BN)
        ldc = _pad(n, step)
        ldc += step if (ldc // step) % 2 == 0 else 0  # an odd multiple of `step`: rows no better aligned
        a = rng.standard_normal((mp, k)).astype(np.float16)
        b = rng.standard_normal((k, np_)).astype(np.float16)
        oa = at
        ob = oa + mp * k
        oc = _pad(ob + k * np_, 8) + (step if align < 16 else 0)  # C's base: `align` bytes, not 2 * align
        at = _pad(oc + mp * ldc, 8)
        places.append((oa, ob, oc))
        mats.append((a, b))
        lds += [k, np_, ldc]
    pool = np.full(at, SENTINEL, np.float16)
    for (oa, ob, _), (a, b) in zip(places, mats):
        pool[oa:oa + a.size] = a.reshape(-1)
        pool[ob:ob + b.size] = b.reshape(-1)
    sizes = np.array(problems(align), np.int32).reshape(-1)
    addrs = [np.zeros(len(places), np.int64) for _ in range(3)]
    return addrs, sizes, np.array(lds, np.int32), pool, places, mats


def _ir(align):
    addrs, sizes, lds, pool, *_ = _case(0, align)
    return grouped_f16.warmup(*addrs, sizes, lds, len(addrs[0]), pool, backend="cuda", NUM_PROGRAMS=3,
                              BM=BM, BN=BN, BK=BK, ALIGN=align, num_warps=WARPS, num_stages=3).ir


@pytest.mark.parametrize("align,store,count", [
    (2, "st.global.b16", BM * BN // THREADS),           # nothing known: one element per access
    (4, "st.global.b32", BM * BN // THREADS // 2),      # pairs
    (16, "st.global.v4.b32", BM * BN // THREADS // 8),  # 16 bytes: the blocked layout's own chunks
])
def test_store_widths_ptx(align, store, count, monkeypatch):
    monkeypatch.delenv("TILES_STMATRIX", raising=False)  # the default staging, whatever the environment says
    if toolchain.ptxas_path() is None:
        pytest.skip("ptxas not on PATH: the PTX is checked by assembling it")
    ptx = toolchain.to_ptx(lower_kernel(_ir(align), nvptx_target("sm_90a"), Options(WARPS, 3)), "sm_90a")
    toolchain.ptxas_info(ptx, "sm_90a")  # it assembles
    assert "wgmma.mma_async" in ptx and "cp.async.cg" in ptx
    stores = re.findall(r"\bst\.global(?:\.v\d)?\.b\d+", ptx)
    assert stores.count(store) == count and len(stores) == count, stores
    loads = [line for line in ptx.splitlines() if "ld.shared" in line]
    # the fragments reach local memory by stmatrix (staging.py): four 8x8 matrices per instruction;
    # transposed for one element per store, so that each thread reads a column of 8 rows at once
    trans = ".trans" if align == 2 else ""
    assert ptx.count(f"stmatrix.sync.aligned.m8n8.x4{trans}.shared.b16") == BM * BN // THREADS // 8
    if align == 2:  # column strips: one 16-byte load per 8 stores
        assert len(loads) == count // 8 and all("ld.shared.v4.b32" in line for line in loads)
    elif align < 16:  # from fragments through local memory once: no blocked copy of the tile besides
        assert len(loads) == count


def _record_stores(monkeypatch):
    """Every global store call of the simulator: (per-thread byte addresses, active lanes, bytes)."""
    from tiles.backends.cuda.simulator import simt as sim_emitter
    calls = []
    store = sim_emitter.SimEmitter.store

    def rec_store(self, p, value, dtype, mask):
        calls.append((p.v.copy(), self._mask(mask), dtype.itemsize))
        store(self, p, value, dtype, mask)

    def rec_vector(self, p, values, dtype, mask):
        calls.append((p.v.copy(), self._mask(mask), dtype.itemsize * len(values)))
        for i, v in enumerate(values):
            store(self, sim_emitter.H(p.v + i * dtype.itemsize), v, dtype, mask)

    monkeypatch.setattr(sim_emitter.SimEmitter, "store", rec_store)
    monkeypatch.setattr(sim_emitter.SimEmitter, "store_vector", rec_vector)
    return calls


@pytest.mark.parametrize("align,family", [(2, "wgmma"), (4, "wgmma"), (16, "wgmma"), (2, "mma.sync")])
def test_grouped_f16_simulated(align, family, monkeypatch):
    from tiles.backends.cuda.simulator import simt as sim_emitter
    if family == "mma.sync":  # sm_80's fragments: rows of a warp contiguous, not interleaved
        monkeypatch.setattr(sim_emitter.SimEmitter, "wgmma_ok", lambda self: False)
    addrs, sizes, lds, pool, places, mats = _case(align, align)
    args = [*addrs, sizes, lds, np.int32(len(addrs[0])), pool]
    base = sim_emitter.addresses(args)[-1]
    for g, place in enumerate(places):
        for arr, off in zip(addrs, place):
            arr[g] = base + 2 * off
    calls = _record_stores(monkeypatch)
    ir = grouped_f16.warmup(*addrs, sizes, lds, len(addrs[0]), pool, backend="cuda", NUM_PROGRAMS=3,
                            BM=BM, BN=BN, BK=BK, ALIGN=align, num_warps=WARPS, num_stages=3).ir
    sim_emitter.run(ir, args, (3,), THREADS, num_stages=3)
    for (m, n, _), (_, _, oc), (a, b), ldc in zip(problems(align), places, mats, lds[2::3]):
        c = pool[oc:oc + _pad(m, BM) * ldc].reshape(-1, ldc)
        want = (a[:m].astype(np.float32) @ b[:, :n].astype(np.float32))
        got = c[:m, :n].astype(np.float32)
        assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
        outside = np.ones(c.shape, bool)
        outside[:m, :n] = False
        assert (c[outside] == SENTINEL).all()  # masked-off elements and row padding untouched
    # each warp instruction writes whole runs: consecutive lanes `width` bytes apart, a new run only
    # where a row of C starts (the blocked layout's scalar stores would make 32 runs of one element)
    assert calls
    most = max(1, 32 * max(width for *_, width in calls) // (2 * BN))
    for addr, active, width in calls:
        for w in range(THREADS // 32):
            lanes = np.nonzero(active[32 * w:32 * w + 32])[0]
            steps = np.diff(addr[32 * w:32 * w + 32][lanes])
            runs = 1 + int((steps != width * np.diff(lanes)).sum())
            assert runs <= most, (width, addr[32 * w:32 * w + 32][lanes])


@pytest.mark.parametrize("align", [2, 4, 16])
def test_grouped_f16_on_gpu(align):
    """The same kernel on the GPU, through torch (the address tables hold device addresses)."""
    from tiles.backends import registry
    gpu, why = registry.status("cuda")
    torch = pytest.importorskip("torch", reason="the address tables are built from torch's device pointers")
    if not (gpu and torch.cuda.is_available()):
        pytest.skip(f"no CUDA GPU for tiles and torch: {why}")
    addrs, sizes, lds, pool, places, mats = _case(10 + align, align)
    dev_pool = torch.from_numpy(pool).cuda()
    base = dev_pool.data_ptr()
    tables = [torch.tensor([base + 2 * place[i] for place in places], dtype=torch.int64, device="cuda")
              for i in range(3)]
    grouped_f16[(3,)](*tables, torch.from_numpy(sizes).cuda(), torch.from_numpy(lds).cuda(), len(places), dev_pool,
                      backend="cuda", NUM_PROGRAMS=3, BM=BM, BN=BN, BK=BK, ALIGN=align, num_warps=WARPS,
                      num_stages=3)
    out = dev_pool.cpu().numpy()
    for (m, n, _), (_, _, oc), (a, b), ldc in zip(problems(align), places, mats, lds[2::3]):
        c = out[oc:oc + _pad(m, BM) * ldc].reshape(-1, ldc)
        want = a[:m].astype(np.float32) @ b[:, :n].astype(np.float32)
        assert np.abs(c[:m, :n].astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()
        outside = np.ones(c.shape, bool)
        outside[:m, :n] = False
        assert (c[outside] == SENTINEL).all()
