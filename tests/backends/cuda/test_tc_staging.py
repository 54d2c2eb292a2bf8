"""MMA tiles leaving the fragment layout through swizzled local memory (``lowering/mma/staging.py``):
16-bit tiles written with ``stmatrix``, 32-bit ones as 8-byte pairs, read back in the blocked
layout with 16-byte loads.  Checked on the simulator (values against numpy, masked edges, and the
shared-memory wavefronts of every warp instruction of the conversion), on the PTX (``ptxas``
assembles it; instruction counts against ``TILES_STMATRIX=0``'s padded path) and, with a GPU,
on the device."""

import re
from collections import Counter

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel
from tiles.backends.lowering.mma.staging import SwizzledRows
from tiles.core import dtypes as D

OUT = {"float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32}


@tiles.jit
def mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, OUT_DTYPE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_tile = a + rm[:, None] * K + rk[None, :]
    b_tile = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        x = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0.0)
        y = tl.load(b_tile, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
        a_tile += BK
        b_tile += BK * N
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(OUT_DTYPE), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _np(name):
    return getattr(D, name).np


# -------------------------------------------------------------------- the arrangement itself

FITTING = [(rows, cols, s) for s, widths in ((2, (8, 16, 32, 64, 128, 192, 256, 512)), (4, (32, 64, 128, 256)))
           for cols in widths for rows in (16, 64, 128)]


@pytest.mark.parametrize("rows,cols,itemsize", FITTING)
def test_swizzle_permutes_units_within_rows(rows, cols, itemsize):
    tile = SwizzledRows(rows, cols, itemsize)
    unit = 16 // itemsize
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    at = np.array([[tile.element(i, j) for j in range(cols)] for i in range(rows)])
    assert sorted(at.reshape(-1)) == list(range(rows * cols))  # a permutation of the tile
    assert (at // cols == r).all()  # ... that keeps every element in its row
    assert (at % unit == c % unit).all()  # ... and moves whole 16-byte units
    assert tile.nbytes == rows * cols * itemsize  # no padding


@pytest.mark.parametrize("rows,cols,itemsize", [(64, 48, 2), (64, 96, 2), (64, 16, 4), (64, 8, 4), (64, 64, 1),
                                               (12, 64, 2)])
def test_unfit_shapes_keep_padded_rows(rows, cols, itemsize):
    assert not SwizzledRows.fits(rows, cols, itemsize)


# -------------------------------------------------------------------- shared-memory wavefronts

def wavefronts(addrs, nbytes):
    """Shared-memory wavefronts of one warp instruction whose lanes access ``nbytes`` at byte
    ``addrs`` (active lanes only): the lanes are served in phases of 128 bytes (32 lanes of up to
    4 bytes, 16 of 8, 8 of 16; an stmatrix matrix's 8 rows are one phase of 16-byte accesses);
    a phase takes as many wavefronts as the most distinct 4-byte words one of the 32 banks holds."""
    per_phase = 32 if nbytes <= 4 else 128 // nbytes
    total = 0
    for p in range(0, len(addrs), per_phase):
        words = {(int(a) + b) // 4 for a in addrs[p:p + per_phase] for b in range(0, max(nbytes, 4), 4)}
        if words:
            total += max(Counter(w % 32 for w in words).values())
    return total


def record_local(monkeypatch, windows):
    """The simulator's local-memory accesses made inside the functions ``windows`` names (pairs of
    a module or dict and a name in it, patched): (what, byte addresses per thread, active lanes, bytes per lane);
    a vector access is one record, ``stmatrix`` one record per matrix."""
    from tiles.backends.cuda.simulator import simt as sim_emitter
    sim = sim_emitter.SimEmitter
    log, depth, inside = [], [0], [0]

    def window(fn):
        def run(*args, **kwargs):
            inside[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                inside[0] -= 1
        return run

    for where, name in windows:
        if isinstance(where, dict):
            monkeypatch.setitem(where, name, window(where[name]))
        else:
            monkeypatch.setattr(where, name, window(getattr(where, name)))
    originals = {n: getattr(sim, n) for n in ("local_store", "local_load", "local_store_vector",
                                              "local_load_vector", "stmatrix")}

    def wrapped(name):
        def call(self, byte_offset, index, *rest):
            if inside[0] and not depth[0]:
                if name == "stmatrix":
                    addr = byte_offset + index.v.astype(np.int64)
                    for i in range(len(rest[0])):
                        lanes = np.zeros(self.threads, bool)
                        for w in range(self.threads // 32):
                            lanes[32 * w + 8 * i:32 * w + 8 * i + 8] = True
                        log.append(("stmatrix", addr, lanes, 16))
                else:
                    if name.endswith("_vector"):
                        width, dtype = (len(rest[0]), rest[1]) if "store" in name else (rest[0], rest[1])
                    else:
                        width, dtype = 1, rest[1] if "store" in name else rest[0]
                    size = self.local_itemsize(dtype)
                    mask = rest[-1] if "store" in name else None
                    log.append((name, byte_offset + index.v.astype(np.int64) * size, self._mask(mask), width * size))
            depth[0] += 1
            try:
                return originals[name](self, byte_offset, index, *rest)
            finally:
                depth[0] -= 1
        return call

    for n in originals:
        monkeypatch.setattr(sim, n, wrapped(n))
    return log


def count_wavefronts(log, threads):
    """(wavefronts taken, the fewest their bytes need) over the recorded warp instructions."""
    assert log
    total = [0, 0]
    for what, addr, active, nbytes in log:
        for w in range(threads // 32):
            lanes = np.nonzero(active[32 * w:32 * w + 32])[0]
            if what == "stmatrix":
                phases = [addr[32 * w + lanes]]
            else:
                per_phase = 32 if nbytes <= 4 else 128 // nbytes
                phases = [addr[32 * w + p:32 * w + p + per_phase][active[32 * w + p:32 * w + p + per_phase]]
                          for p in range(0, 32, per_phase)]
            total[0] += sum(wavefronts(ph, nbytes) for ph in phases)
            total[1] += sum(1 for ph in phases if len(ph))
    return tuple(total)


# -------------------------------------------------------------------- simulated kernels

CASES = [  # (BM, BN, BK, warps, M, N, K, out): masked edges in M and N, a K tail
    (128, 256, 64, 8, 150, 250, 80, "float16"),
    (128, 128, 32, 4, 128, 100, 64, "bfloat16"),
    (64, 64, 32, 4, 70, 64, 48, "float16"),
    (128, 64, 64, 8, 128, 61, 64, "bfloat16"),
    (128, 128, 32, 8, 130, 128, 32, "float32"),
    (64, 32, 32, 4, 64, 32, 32, "float16"),   # rows of 64 bytes: two rows per 128-byte line
    (64, 16, 32, 4, 60, 16, 32, "float16"),   # rows of 32 bytes: four rows per line
    (64, 64, 32, 4, 64, 64, 32, "float32"),
    (64, 256, 32, 4, 64, 256, 32, "float16"),  # 4 rows per round of the blocked read: keys change by round
]
MMA_SYNC_ONLY = [  # tiles wgmma does not take (M not a multiple of 64)
    (16, 16, 32, 4, 16, 16, 32, "float16"),   # warps split N: one fragment column each, stmatrix.x2
    (64, 16, 32, 4, 64, 16, 32, "float32"),   # 64-byte fp32 rows: padded rows
]


def _run(case, monkeypatch, family="wgmma", seed=0):
    from tiles.backends.cuda.simulator import simt as sim_emitter
    from tiles.backends.lowering.mma import fragments
    from tiles.backends.lowering.mma.base import TC_RULES
    from tiles.core.ops import Op
    bm, bn, bk, warps, m, n, k, out = case
    if family == "mma.sync":
        monkeypatch.setattr(sim_emitter.SimEmitter, "wgmma_ok", lambda self: False)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, _np(out))
    ir = mm.warmup(a, b, c, m, n, k, backend="cuda", BM=bm, BN=bn, BK=bk, OUT_DTYPE=OUT[out], num_warps=warps,
                   num_stages=3).ir
    # the conversion to the blocked layout, and stores written straight from fragments (epilogue.py)
    log = record_local(monkeypatch, [(fragments, "to_blocked"), (TC_RULES, Op.STORE)])
    calls = Counter()
    stm = sim_emitter.SimEmitter.stmatrix

    def counted(self, *args):
        calls["stmatrix"] += 1
        return stm(self, *args)
    monkeypatch.setattr(sim_emitter.SimEmitter, "stmatrix", counted)
    sim_emitter.run(ir, [a, b, c, np.int32(m), np.int32(n), np.int32(k)], (tiles.cdiv(m, bm), tiles.cdiv(n, bn)),
                    32 * warps, num_stages=3)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-2 if out != "float32" else 1e-5
    got = c.astype(np.float64)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() <= tol * np.abs(want).max()
    return log, calls


@pytest.mark.parametrize("case", CASES, ids=lambda c: "{}x{}x{}_w{}_{}x{}x{}_{}".format(*c))
def test_staged_epilogue_simulated(case, monkeypatch):
    log, calls = _run(case, monkeypatch)
    bm, bn, _, warps, *_, out = case
    got, need = count_wavefronts(log, 32 * warps)
    assert got == need
    programs = tiles.cdiv(case[4], bm) * tiles.cdiv(case[5], bn)
    if out == "float32":
        assert calls["stmatrix"] == 0
        assert {nbytes for what, *_, nbytes in log if "store" in what} == {8}
    else:  # one stmatrix.x4 (a call of the simulator: every warp) per 16 x 16 block of fragments
        assert calls["stmatrix"] * 4 * 64 * warps == bm * bn * programs
        assert not [r for r in log if r[0].startswith("local_store")]
    loads = {nbytes for what, *_, nbytes in log if what.startswith("local_load")}
    if case[5] % 2 and out != "float32":  # N odd: one element per global store, from column strips
        assert loads == {16}


@pytest.mark.parametrize("case", [CASES[1], CASES[4], *MMA_SYNC_ONLY], ids=["bf16", "fp32", "16x16", "fp32-n16"])
def test_staged_epilogue_mma_sync_simulated(case, monkeypatch):
    """sm_90 with wgmma switched off: the mma.sync fragments (rows of a warp contiguous) go the same way."""
    log, calls = _run(case, monkeypatch, family="mma.sync")
    got, need = count_wavefronts(log, 32 * case[3])
    if SwizzledRows.fits(case[0], case[1], 2 if case[-1] != "float32" else 4):
        assert got == need
    else:
        assert calls["stmatrix"] == 0


@pytest.mark.parametrize("case,why", [
    (CASES[5], "rows of 64 bytes: a 16-byte read phase spans two padded rows"),
    (CASES[7], "8-byte pairs: the four rows a half-warp writes overlap in bank groups")])
def test_switched_off_keeps_padded_pairs(case, why, monkeypatch):
    """TILES_STMATRIX=0: the padded rows and pair stores as before, correct, but with the bank
    conflicts the swizzle removes (which also shows the wavefront count sees them)."""
    monkeypatch.setenv("TILES_STMATRIX", "0")
    log, calls = _run(case, monkeypatch)
    assert calls["stmatrix"] == 0
    got, need = count_wavefronts(log, 32 * case[3])
    assert got > need, why


@tiles.jit
def bmm_f16(a, b, c, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    bs = tl.arange(0, B)[:, None, None]
    rows = tl.arange(0, M)[None, :, None]
    cols = tl.arange(0, N)[None, None, :]
    x = tl.load(a + bs * M * K + rows * K + tl.arange(0, K)[None, None, :])
    y = tl.load(b + bs * K * N + tl.arange(0, K)[None, :, None] * N + cols)
    tl.store(c + bs * M * N + rows * N + cols, tl.dot(x, y).to(tl.float16))


def test_batched_dot_simulated(monkeypatch):
    """A 3-D dot (mma.sync, batch folded into the staged tile's rows) leaves its fragments the same way."""
    from tiles.backends.cuda.simulator import simt as sim_emitter
    from tiles.backends.lowering.mma import fragments
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 32, 32)).astype(np.float16)
    b = rng.standard_normal((2, 32, 32)).astype(np.float16)
    c = np.full((2, 32, 32), np.nan, np.float16)
    ir = bmm_f16.warmup(a, b, c, 2, 32, 32, 32, backend="cuda", num_warps=4).ir
    log = record_local(monkeypatch, [(fragments, "to_blocked")])
    sim_emitter.run(ir, [a, b, c], (1,), 128)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c.astype(np.float64) - want).max() <= 1e-2 * np.abs(want).max()
    assert any(what == "stmatrix" for what, *_ in log)
    got, need = count_wavefronts(log, 128)
    assert got == need


def test_switch_is_part_of_the_compile_cache_key(monkeypatch):
    """A/B runs in separate processes must not share compiled kernels across TILES_STMATRIX: the
    jit reads it into the options the disk key hashes."""
    from tiles.backends import registry
    from tiles.runtime.cache import compile_key
    cuda = registry.get("cuda")

    def key():
        return compile_key(mm, [], cuda, mm._options(cuda, 4, 3))
    monkeypatch.delenv("TILES_STMATRIX", raising=False)
    on = key()
    monkeypatch.setenv("TILES_STMATRIX", "0")
    assert key() != on


# -------------------------------------------------------------------- PTX

def _ptx(bm, bn, bk, warps, out, arch="sm_90a", stmatrix=True):
    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), _np(out))
    ir = mm.warmup(a, a, c, 256, 256, 256, backend="cuda", BM=bm, BN=bn, BK=bk, OUT_DTYPE=OUT[out],
                   num_warps=warps, num_stages=3).ir
    options = Options(warps, 3) if stmatrix else Options(warps, 3).without("stmatrix")  # (TILES_STMATRIX=0)
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target(arch), options), arch)


def _shared_ops(ptx):
    return Counter(m.group(0) for m in re.finditer(r"\b(?:st|ld)\.shared(?:\.v\d)?\.b\d+|\bstmatrix\S*", ptx))


@pytest.mark.parametrize("bm,bn,bk,warps,out", [(128, 256, 64, 8, "float16"), (128, 128, 32, 4, "bfloat16"),
                                                (64, 64, 32, 4, "float16"), (128, 128, 64, 8, "float32")])
def test_ptx_counts(bm, bn, bk, warps, out):
    if toolchain.ptxas_path() is None:
        pytest.skip("ptxas not on PATH: the PTX is checked by assembling it")
    new = _ptx(bm, bn, bk, warps, out)
    toolchain.ptxas_info(new, "sm_90a")
    old = _ptx(bm, bn, bk, warps, out, stmatrix=False)
    per_thread = bm * bn // (32 * warps)
    n_new, n_old = _shared_ops(new), _shared_ops(old)
    s = 2 if out != "float32" else 4
    assert n_new["ld.shared.v4.b32"] == n_old["ld.shared.v4.b32"] == per_thread * s // 16
    if out == "float32":
        assert n_new["st.shared.v2.b32"] == n_old["st.shared.v2.b32"] == per_thread // 2
    else:
        assert n_new["stmatrix.sync.aligned.m8n8.x4.shared.b16"] == per_thread // 8
        assert n_old["st.shared.b32"] == per_thread // 2 and "stmatrix" not in old
        assert not any(k.startswith("st.shared") for k in n_new)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_mma_sync(arch):
    """mma.sync (no wgmma without sm_90a): sm_90 writes the swizzled tile with stmatrix, sm_80 (which
    has none) as 4-byte pairs."""
    if toolchain.ptxas_path() is None:
        pytest.skip("ptxas not on PATH: the PTX is checked by assembling it")
    ptx = _ptx(128, 128, 32, 4, "float16", arch=arch)
    toolchain.ptxas_info(ptx, arch)
    n = _shared_ops(ptx)
    assert "mma.sync" in ptx and "wgmma" not in ptx
    assert n["ld.shared.v4.b32"] == 16
    if arch == "sm_80":
        assert "stmatrix" not in ptx
        assert n["st.shared.v2.b16"] + n["st.shared.b32"] == 128 * 128 // 128 // 2
    else:
        assert n["stmatrix.sync.aligned.m8n8.x4.shared.b16"] == 16 and not any(k.startswith("st.") for k in n)


# -------------------------------------------------------------------- GPU

@pytest.mark.parametrize("case", CASES, ids=lambda c: "{}x{}x{}_w{}_{}x{}x{}_{}".format(*c))
def test_staged_epilogue_on_gpu(case):
    from tiles.backends import registry
    gpu, why = registry.status("cuda")
    if not gpu:
        pytest.skip(f"no CUDA GPU: {why}")
    bm, bn, bk, warps, m, n, k, out = case
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, _np(out))
    mm[(tiles.cdiv(m, bm), tiles.cdiv(n, bn))](a, b, c, m, n, k, backend="cuda", BM=bm, BN=bn, BK=bk,
                                               OUT_DTYPE=OUT[out], num_warps=warps, num_stages=3)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = c.astype(np.float64)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() <= (1e-2 if out != "float32" else 1e-5) * np.abs(want).max()
