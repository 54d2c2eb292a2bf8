"""The simulator's Hopper wgmma against numpy: descriptor layouts (K-major with 128/64/32-byte
swizzles, MN-major), A from registers, accumulation chains and asynchronous completion."""

import numpy as np
import pytest

from tiles.backends.cuda.simulator.simt import WARP, H, SimEmitter
from tiles.core import dtypes as D

rng = np.random.default_rng(0)
MODE = {128: 1, 64: 2, 32: 3}


def _sim(threads=128):
    sim = SimEmitter([], (0, 0, 0), (1, 1, 1), np.zeros(16, np.uint8))
    sim.begin_kernel("k", [], threads)
    return sim


def _desc(sim, start, lbo, sbo, W):
    d = (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (MODE[W] << 62)
    return H(np.full(sim.threads, np.uint64(d).view(np.int64)))


def _phys(x, W):
    return x ^ (((x >> 7) & (W // 16 - 1)) << 4)


def _put(sim, logical, values):
    """Write ``values`` (any shape) element by element at the swizzle-free ``logical`` byte
    addresses, each swizzled with the layout's W by the caller."""
    s = values.dtype.itemsize
    raw = np.ascontiguousarray(values).reshape(-1, 1).view(np.uint8)
    for at, b in zip(logical.reshape(-1), raw):
        sim.smem[at:at + s] = b


def _put_k_major(sim, M, start, sbo, W):
    """M (rows x k) with each row's k elements contiguous, 8-row core groups ``sbo`` apart."""
    r, kk = np.indices(M.shape)
    _put(sim, _phys(start + (r // 8) * sbo + (r % 8) * W + kk * M.dtype.itemsize, W), M)


def _put_mn_major(sim, M, start, lbo, sbo, W):
    """M (mn x 16) with mn contiguous: W-byte chunks of mn, ``lbo`` apart; k in 8-row groups ``sbo`` apart."""
    s = M.dtype.itemsize
    mn, kk = np.indices(M.shape)
    per = W // s
    _put(sim, _phys(start + (mn // per) * lbo + (kk // 8) * sbo + (kk % 8) * W + (mn % per) * s, W), M)


def _layout(n):
    """(register, thread in warpgroup) -> (row, col) of D."""
    i, t = np.indices((n // 2, 128))
    w, lane = t // 32, t % 32
    return 16 * w + lane // 4 + 8 * ((i % 4) // 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


def _to_regs(sim, C, g=0):
    n = C.shape[1]
    rows, cols = _layout(n)
    out = np.zeros((n // 2, sim.threads), C.dtype)
    out[:, 128 * g:128 * g + 128] = C[rows, cols]
    return [H(o) for o in out]


def _from_regs(regs, g=0):
    n = 2 * len(regs)
    rows, cols = _layout(n)
    Dm = np.zeros((64, n), regs[0].v.dtype)
    Dm[rows, cols] = np.stack([r.v[128 * g:128 * g + 128] for r in regs])
    return Dm


def _random(shape, dtype):
    if dtype.is_int:
        return rng.integers(-128 if dtype.is_signed else 0, 128 if dtype.is_signed else 256, shape).astype(dtype.np)
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype.name == "float32":  # representable in tf32
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return x.astype(dtype.np)


def _ref(A, B, C):
    if A.dtype.kind in "iu":
        return (A.astype(np.int64) @ B.astype(np.int64) + C).astype(np.int32)
    return A.astype(np.float64) @ B.astype(np.float64) + C


def _check(sim, regs, A, B, C, g=0):
    got = _from_regs(regs, g)
    if A.dtype.kind in "iu":
        np.testing.assert_array_equal(got, _ref(A, B, C))
    else:
        np.testing.assert_allclose(got, _ref(A, B, C), rtol=1e-5, atol=1e-5)


def _one(sim, a, b_desc, C, dtype, k, trans_a=False, trans_b=False):
    sim.wgmma_fence()
    out = sim.wgmma(C.shape[1], k, a, b_desc, _to_regs(sim, C), dtype, trans_a, trans_b)
    sim.wgmma_commit()
    return sim.wgmma_wait(0, out)


@pytest.mark.parametrize("W", [128, 64, 32])
@pytest.mark.parametrize("n", [8, 64, 256])
def test_k_major_fp16(W, n):
    sim = _sim()
    A, B = _random((64, 16), D.float16), _random((16, n), D.float16)
    C = rng.standard_normal((64, n)).astype(np.float32)
    a_at, b_at = 1024, 1024 + 8 * 8 * W
    _put_k_major(sim, A, a_at, 8 * W, W)
    _put_k_major(sim, B.T, b_at, 8 * W, W)
    a = _desc(sim, a_at, 0, 8 * W, W)
    assert sim.shared_address(a_at).v.dtype == np.int32 and (sim.shared_address(a_at).v == a_at).all()
    sim.fence_async_shared()
    _check(sim, _one(sim, a, _desc(sim, b_at, 0, 8 * W, W), C, D.float16, 16), A, B, C)


@pytest.mark.parametrize("dtype", [D.bfloat16, D.float32, D.int8, D.uint8], ids=str)
@pytest.mark.parametrize("W", [128, 32])
def test_k_major_dtypes(dtype, W):
    sim = _sim()
    k, n = 32 // dtype.itemsize, 32
    A, B = _random((64, k), dtype), _random((k, n), dtype)
    C = (rng.integers(-1000, 1000, (64, n)).astype(np.int32) if dtype.is_int
         else rng.standard_normal((64, n)).astype(np.float32))
    _put_k_major(sim, A, 0, 8 * W, W)
    _put_k_major(sim, B.T, 8192, 8 * W, W)
    got = _one(sim, _desc(sim, 0, 0, 8 * W, W), _desc(sim, 8192, 0, 8 * W, W), C, dtype, k)
    _check(sim, got, A, B, C)


def test_tf32_drops_low_mantissa_bits():
    sim = _sim()
    A = np.full((64, 8), 1 + 2.0 ** -20, np.float32)  # not representable in tf32: reads as 1
    B = np.ones((8, 8), np.float32)
    _put_k_major(sim, A, 0, 1024, 128)
    _put_k_major(sim, B.T, 8192, 1024, 128)
    got = _one(sim, _desc(sim, 0, 0, 1024, 128), _desc(sim, 8192, 0, 1024, 128), np.zeros((64, 8), np.float32),
               D.float32, 8)
    np.testing.assert_array_equal(_from_regs(got), np.full((64, 8), 8, np.float32))


def test_mn_major_b_uses_lbo():
    """B (16 x 128) stored row-major (n contiguous): two 64-column chunks ``lbo`` apart."""
    sim = _sim()
    n, W = 128, 128
    A, B = _random((64, 16), D.float16), _random((16, n), D.float16)
    C = np.zeros((64, n), np.float32)
    _put_k_major(sim, A, 0, 1024, W)
    b_at, lbo, sbo = 8192, 2048, 1024
    _put_mn_major(sim, B.T, b_at, lbo, sbo, W)
    got = _one(sim, _desc(sim, 0, 0, 1024, W), _desc(sim, b_at, lbo, sbo, W), C, D.float16, 16, trans_b=True)
    _check(sim, got, A, B, C)
    # the same bytes read K-major are another matrix
    sim.wgmma_fence()
    other = sim.wgmma(n, 16, _desc(sim, 0, 0, 1024, W), _desc(sim, b_at, lbo, sbo, W), _to_regs(sim, C),
                      D.float16, False, False)
    sim.wgmma_commit()
    assert not np.allclose(_from_regs(sim.wgmma_wait(0, other)), _ref(A, B, C), atol=1e-3)


def test_mn_major_a():
    """A (64 x 16) stored column-major (m contiguous) with 64-byte swizzle: two 32-row chunks."""
    sim = _sim()
    W, n = 64, 64
    A, B = _random((64, 16), D.float16), _random((16, n), D.float16)
    C = rng.standard_normal((64, n)).astype(np.float32)
    lbo, sbo = 1024, 512
    _put_mn_major(sim, A, 0, lbo, sbo, W)
    _put_k_major(sim, B.T, 8192, 8 * W, W)
    got = _one(sim, _desc(sim, 0, lbo, sbo, W), _desc(sim, 8192, 0, 8 * W, W), C, D.float16, 16, trans_a=True)
    _check(sim, got, A, B, C)


def _a_fragment(sim, A, g=0):
    """A (64 x 16 fp16) as 4 registers per thread: mma.sync m16n8k16's A fragment of warp w's rows."""
    regs = np.zeros((4, sim.threads), np.uint32)
    bits = A.view(np.uint16).astype(np.uint32)
    for w in range(4):
        for lane in range(WARP):
            r, q = 16 * w + lane // 4, 2 * (lane % 4)
            t = 128 * g + 32 * w + lane
            for i, (row, col) in enumerate(((r, q), (r + 8, q), (r, q + 8), (r + 8, q + 8))):
                regs[i, t] = bits[row, col] | (bits[row, col + 1] << 16)
    return [H(x.view(np.int32)) for x in regs]


@pytest.mark.parametrize("dtype", [D.float16, D.bfloat16], ids=str)
def test_a_from_registers(dtype):
    sim = _sim()
    n, W = 64, 128
    A, B = _random((64, 16), dtype), _random((16, n), dtype)
    C = rng.standard_normal((64, n)).astype(np.float32)
    _put_k_major(sim, B.T, 0, 8 * W, W)
    _check(sim, _one(sim, _a_fragment(sim, A), _desc(sim, 0, 0, 8 * W, W), C, dtype, 16), A, B, C)


def test_a_from_registers_matches_mma_sync():
    """The register A fragment is the one the simulated mma.sync takes."""
    sim = _sim()
    A = _random((64, 16), D.float16)
    regs = _a_fragment(sim, A)
    for w in range(4):
        np.testing.assert_array_equal(sim._frag_a([r.v for r in regs], 32 * w, D.float16), A[16 * w:16 * w + 16])


def test_chain_over_k_in_one_swizzled_tile():
    """A 64 x 64 and B 64 x 128 (K-major, 128-byte rows): four k-steps, the start address advanced
    by 32 bytes inside the swizzled rows, each accumulating onto the previous pending result."""
    sim = _sim()
    n, W, K = 128, 128, 64
    A, B = _random((64, K), D.float16), _random((K, n), D.float16)
    C = rng.standard_normal((64, n)).astype(np.float32)
    _put_k_major(sim, A, 0, 1024, W)
    _put_k_major(sim, B.T, 8192, 1024, W)
    acc = _to_regs(sim, C)
    sim.wgmma_fence()
    for ks in range(K // 16):
        acc = sim.wgmma(n, 16, _desc(sim, 32 * ks, 0, 1024, W), _desc(sim, 8192 + 32 * ks, 0, 1024, W), acc,
                        D.float16, False, False)
    sim.wgmma_commit()
    _check(sim, sim.wgmma_wait(0, acc), A, B, C)


def test_wait_one_leaves_newest_group_pending():
    sim = _sim()
    n, W = 32, 64
    A1, A2, B = _random((64, 16), D.float16), _random((64, 16), D.float16), _random((16, n), D.float16)
    C = rng.standard_normal((64, n)).astype(np.float32)
    _put_k_major(sim, A1, 0, 8 * W, W)
    _put_k_major(sim, A2, 4096, 8 * W, W)
    _put_k_major(sim, B.T, 8192, 8 * W, W)
    b = _desc(sim, 8192, 0, 8 * W, W)
    sim.wgmma_fence()
    first = sim.wgmma(n, 16, _desc(sim, 0, 0, 8 * W, W), b, _to_regs(sim, C), D.float16, False, False)
    sim.wgmma_commit()
    second = sim.wgmma(n, 16, _desc(sim, 4096, 0, 8 * W, W), b, first, D.float16, False, False)
    with pytest.raises(RuntimeError, match="before a wgmma_wait"):
        _ = first[0].v
    sim.wgmma_commit()
    # the pipelined pattern: wait(1) on the newest results hands them back still pending
    still = sim.wgmma_wait(1, second)
    with pytest.raises(RuntimeError, match="before a wgmma_wait"):
        _ = still[0].v
    done = sim.wgmma_wait(1, first)
    _check(sim, done, A1, B, C)
    sim.wgmma_wait(0, [])
    _check(sim, sim.wgmma_wait(0, still), A2, B, _ref(A1, B, C).astype(np.float32))


def test_smem_read_at_completion():
    """Overwriting an operand before the wait changes the result, as on the GPU."""
    sim = _sim()
    n, W = 16, 32
    A, B, B2 = _random((64, 16), D.float16), _random((16, n), D.float16), _random((16, n), D.float16)
    C = np.zeros((64, n), np.float32)
    _put_k_major(sim, A, 0, 8 * W, W)
    _put_k_major(sim, B.T, 4096, 8 * W, W)
    out = sim.wgmma(n, 16, _desc(sim, 0, 0, 8 * W, W), _desc(sim, 4096, 0, 8 * W, W), _to_regs(sim, C),
                    D.float16, False, False)
    sim.wgmma_commit()
    _put_k_major(sim, B2.T, 4096, 8 * W, W)  # too early: the wgmma has not read B yet
    _check(sim, sim.wgmma_wait(0, out), A, B2, C)


def test_uncommitted_and_empty_groups():
    sim = _sim()
    n, W = 8, 128
    A, B = _random((64, 16), D.float16), _random((16, n), D.float16)
    C = np.zeros((64, n), np.float32)
    _put_k_major(sim, A, 0, 1024, W)
    _put_k_major(sim, B.T, 8192, 1024, W)
    out = sim.wgmma(n, 16, _desc(sim, 0, 0, 1024, W), _desc(sim, 8192, 0, 1024, W), _to_regs(sim, C),
                    D.float16, False, False)
    left = sim.wgmma_wait(0, out)  # not committed: not waited for
    with pytest.raises(RuntimeError):
        _ = left[0].v
    sim.wgmma_commit()
    sim.wgmma_commit()  # an empty group counts: it is the one wait(1) leaves in flight
    _check(sim, sim.wgmma_wait(1, out), A, B, C)


def test_two_warpgroups():
    sim = _sim(256)
    n, W = 64, 128
    A0, A1, B = _random((64, 16), D.float16), _random((64, 16), D.float16), _random((16, n), D.float16)
    _put_k_major(sim, A0, 0, 1024, W)
    _put_k_major(sim, A1, 8192, 1024, W)
    _put_k_major(sim, B.T, 16384, 1024, W)
    a = _desc(sim, 0, 0, 1024, W)
    a.v[128:] = _desc(sim, 8192, 0, 1024, W).v[128:]
    C0, C1 = rng.standard_normal((2, 64, n)).astype(np.float32)
    acc = [H(x.v + y.v) for x, y in zip(_to_regs(sim, C0, 0), _to_regs(sim, C1, 1))]
    out = sim.wgmma(n, 16, a, _desc(sim, 16384, 0, 1024, W), acc, D.float16, False, False)
    sim.wgmma_commit()
    out = sim.wgmma_wait(0, out)
    _check(sim, out, A0, B, C0, g=0)
    _check(sim, out, A1, B, C1, g=1)


def test_unswizzled_descriptor_not_implemented():
    sim = _sim()
    d = H(np.zeros(128, np.int64))
    with pytest.raises(NotImplementedError):  # found when the issue checks its operands have landed
        sim.wgmma(8, 16, d, d, _to_regs(sim, np.zeros((64, 8), np.float32)), D.float16, False, False)


def test_cp_async_bytes_in_flight_until_their_group_is_waited():
    """A wgmma or a local load on cp.async data before its group is waited for is an error in the
    simulator (on the GPU it reads whatever has landed); after the wait the copy reads back."""
    values = rng.standard_normal((64, 16)).astype(np.float16)
    sim = SimEmitter([], (0, 0, 0), (1, 1, 1), np.frombuffer(values.tobytes(), np.uint8).copy())
    sim.begin_kernel("k", [], 128)
    t = np.arange(128)
    row, chunk = t // 2, t % 2  # each thread copies 16 bytes of a 32-byte row into a 32-byte swizzle
    dst = H(((row * 32 + chunk * 16) ^ (((row * 32 >> 7) & 1) << 4)).astype(np.int32))
    sim.cp_async(0, dst, H((row * 32 + chunk * 16).astype(np.int64)), 16, None)
    sim.cp_async_commit()
    sim.cp_async(4096, H(np.zeros(128, np.int32)), H(np.zeros(128, np.int64)), 16, None)  # a newer group
    sim.cp_async_commit()
    b = _desc(sim, 4096, 0, 256, 32)
    acc = _to_regs(sim, np.zeros((64, 8), np.float32))
    with pytest.raises(RuntimeError, match="not yet waited"):
        sim.wgmma(8, 16, _desc(sim, 0, 0, 256, 32), b, acc, D.float16, False, False)
    with pytest.raises(RuntimeError, match="not yet waited"):
        sim.local_load(0, H(np.zeros(128, np.int32)), D.float16)
    sim.cp_async_wait(1)  # the first group has landed, the second is still in flight
    got = np.array([sim.local_load(0, H(np.full(128, i, np.int32)), D.float16).v[0] for i in range(16)])
    np.testing.assert_array_equal(got, values[0])
    with pytest.raises(RuntimeError, match="not yet waited"):
        sim.wgmma(8, 16, _desc(sim, 0, 0, 256, 32), b, acc, D.float16, False, False)
