"""Last-axis scans through warp shuffles (``lowering/warp_scan.py``), run on the numpy SIMT simulator
(lanes shuffle as PTX's ``shfl.sync.idx``, or ``shfl.sync.bfly`` alone as on a target without indexed
shuffles): rows of one chunk, rows on a lane group, rows of whole warps cut into warp segments (at
most a warp's segments scanned on lanes; rows of whole rounds; rows inside a round, Mamba's 16x256
on 4 warps; a replicated round); forward and reversed, a sum in int32 (exact, wrapping) and a
non-commutative recurrence (operand order); then the corpus' two scan forms at odd sizes."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.cuda.simulator.simt import SimEmitter, run


@pytest.fixture(params=["indexed", "butterfly"])
def shuffles(request, monkeypatch):
    """The scan as CUDA lowers it (indexed shuffles), and as on a target with butterfly shuffles only."""
    if request.param == "butterfly":
        monkeypatch.setattr(SimEmitter, "shuffle_index", lambda self, value, lane, dtype: None)
    return request.param


@tiles.jit
def cumsum_rows(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=1, reverse=REVERSE))


@tiles.jit
def compose(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@tiles.jit
def recurrence_rows(a_ptr, b_ptr, h_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1, compose, reverse=REVERSE)
    tl.store(h_ptr + offs, h)


SHAPES = [  # (R, C, warps): C / 4 chunks a row
    (32, 4, 4), (64, 2, 2),                   # a row of one chunk: nothing comes before it
    (8, 16, 1), (4, 128, 4), (2, 64, 2),      # a row on a group of lanes (4, 32, 16 lanes)
    (2, 2048, 4), (1, 4096, 4), (2, 1024, 8), (16, 512, 4),  # rows of whole rounds: warp segments
    (16, 256, 4), (4, 256, 8), (8, 512, 8),   # rows of whole warps inside a round: 2, 2, 4 warps a row
    (2, 64, 4), (1, 64, 4),                   # the same with one element a chunk; a replicated round
    (1, 256, 4),                              # whole rounds of 2-element chunks
    (1, 8192, 4), (64, 256, 4), (32, 512, 8),  # more than a warp's segments: rounds' totals, a row's
]


def _flip(a, reverse):
    return a[:, ::-1] if reverse else a


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("R, C, warps", SHAPES)
def test_int_cumsum_on_the_simulator(rng, R, C, warps, reverse, shuffles):
    x = rng.integers(-2**31, 2**31 - 1, (R, C), dtype=np.int32)
    x[0, :2] = [np.iinfo(np.int32).max, np.iinfo(np.int32).min]
    out = np.zeros_like(x)
    ir = cumsum_rows.warmup(x, out, R=R, C=C, REVERSE=reverse, num_warps=warps, backend="cuda").ir
    run(ir, [x, out], (1,), warps * 32)
    with np.errstate(over="ignore"):
        want = _flip(np.cumsum(_flip(x, reverse), axis=1, dtype=np.int32), reverse)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("R, C, warps", [(8, 4, 1), (8, 16, 1), (2, 2048, 4), (2, 1024, 8), (16, 256, 4),
                                         (8, 512, 8), (1, 64, 4), (1, 8192, 4)])
def test_recurrence_keeps_operand_order_on_the_simulator(rng, R, C, warps, reverse, shuffles):
    a = rng.uniform(0.5, 1.0, (R, C)).astype(np.float64)
    b = rng.standard_normal((R, C))
    h = np.zeros_like(b)
    ir = recurrence_rows.warmup(a, b, h, R=R, C=C, REVERSE=reverse, num_warps=warps, backend="cuda").ir
    run(ir, [a, b, h], (1,), warps * 32)
    want = np.empty_like(b)
    state = np.zeros(R)
    for j in (range(C - 1, -1, -1) if reverse else range(C)):
        state = state * a[:, j] + b[:, j] if j != (C - 1 if reverse else 0) else b[:, j]
        want[:, j] = state
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-9)


# ---- the corpus' forms at the benchmark's configurations (benchmarks/corpus_speed.py), odd sizes


@tiles.jit
def blocked_cumsum(inp, out, M, N, K, BLOCK_SIZE: tl.constexpr, REVERSE: tl.constexpr):
    """FlagGems' scan_part_sum_kernel form: blocks along N with a carried prefix, int64 accumulation."""
    pid_m, pid_k = tl.program_id(0), tl.program_id(1)
    carry = tl.zeros([], dtype=tl.int64)
    for start in range(0, N, BLOCK_SIZE):
        n = start + tl.arange(0, BLOCK_SIZE)
        offset = pid_m * N * K + n * K + pid_k
        mask = n < N
        x = tl.load(inp + offset, mask=mask, other=0).to(tl.int64)
        result = tl.cumsum(x, axis=0, reverse=REVERSE) + carry
        carry += tl.sum(x, axis=0)
        tl.store(out + offset, result, mask=mask)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("N, K, block", [(2500, 1, 1024), (77, 3, 64), (300, 1, 256)])
def test_blocked_int_cumsum_on_the_simulator(rng, N, K, block, reverse):
    M = 2
    x = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, (M, N, K), dtype=np.int32, endpoint=True)
    x[0, :3, 0] = [np.iinfo(np.int32).max, np.iinfo(np.int32).max, np.iinfo(np.int32).min]
    out = np.zeros((M, N, K), np.int64)
    args = [x, out, np.int32(M), np.int32(N), np.int32(K)]
    ir = blocked_cumsum.warmup(*args, BLOCK_SIZE=block, REVERSE=reverse, num_warps=4, backend="cuda",
                               grid=(M, K)).ir
    run(ir, args, (M, K), 128)
    wide = x.astype(np.int64)
    if reverse:  # each block scans backwards, the carry runs forwards (the form's own semantics)
        want = np.empty_like(wide)
        carry = np.zeros((M, K), np.int64)
        for s in range(0, N, block):
            part = wide[:, s:s + block]
            want[:, s:s + block] = np.flip(np.cumsum(np.flip(part, 1), 1), 1) + carry[:, None]
            carry += part.sum(1)
    else:
        want = np.cumsum(wide, 1)
    np.testing.assert_array_equal(out, want)


@tiles.jit
def chunk_cumsum(dt_ptr, a_ptr, out_ptr, seqlen, nheads, chunk_size, s_b, s_s, s_ob, s_oh, s_oc,
                 BLOCK_H: tl.constexpr, BLOCK_CHUNK: tl.constexpr, REVERSE: tl.constexpr):
    """Mamba's _chunk_cumsum form: a [heads, time] tile read across a time-major input, scanned along time."""
    pid_b, pid_c, pid_h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    dt_ptr += pid_b * s_b + pid_c * chunk_size * s_s
    out_ptr += pid_b * s_ob + pid_c * s_oc
    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_c = tl.arange(0, BLOCK_CHUNK)
    limit = min(chunk_size, seqlen - pid_c * chunk_size)
    ok = (offs_h[:, None] < nheads) & (offs_c[None, :] < limit)
    dt = tl.load(dt_ptr + offs_h[:, None] + offs_c[None, :] * s_s, mask=ok, other=0.0)
    a = tl.load(a_ptr + offs_h, mask=offs_h < nheads, other=0.0)
    tl.store(out_ptr + offs_h[:, None] * s_oh + offs_c[None, :], tl.cumsum(dt * a[:, None], axis=1, reverse=REVERSE),
             mask=(offs_h[:, None] < nheads) & (offs_c[None, :] < chunk_size))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("seqlen, heads, chunk, bh, bc", [(300, 21, 200, 16, 256), (70, 5, 64, 4, 64),
                                                          (100, 3, 40, 8, 64)])
def test_chunk_cumsum_on_the_simulator(rng, seqlen, heads, chunk, bh, bc, reverse):
    batch = 1
    nchunks = -(-seqlen // chunk)
    dt = rng.standard_normal((batch, seqlen, heads)).astype(np.float32)
    a = -rng.uniform(0.5, 2.0, heads).astype(np.float32)
    out = np.full((batch, heads, nchunks, chunk), np.nan, np.float32)
    args = [dt, a, out, np.int32(seqlen), np.int32(heads), np.int32(chunk), np.int32(seqlen * heads),
            np.int32(heads), np.int32(heads * nchunks * chunk), np.int32(nchunks * chunk), np.int32(chunk)]
    grid = (batch, nchunks, -(-heads // bh))
    ir = chunk_cumsum.warmup(*args, BLOCK_H=bh, BLOCK_CHUNK=bc, REVERSE=reverse, num_warps=4, backend="cuda",
                             grid=grid).ir
    run(ir, args, grid, 128)
    padded = np.zeros((batch, nchunks * chunk, heads))
    padded[:, :seqlen] = dt
    x = padded.reshape(batch, nchunks, chunk, heads).transpose(0, 3, 1, 2) * a[None, :, None, None]
    want = np.flip(np.cumsum(np.flip(x, -1), -1), -1) if reverse else np.cumsum(x, -1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
