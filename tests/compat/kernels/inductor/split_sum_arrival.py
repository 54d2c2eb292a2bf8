"""PyTorch Inductor's cooperative (split) reduction, ``triton_red_fused_sum_0`` with ``RSPLIT``: each
program reduces its ``rsplit_chunk`` of every row with an ``r0_offset`` loop from ``rsplit_start`` to
``rsplit_end``, writes its partial to a workspace, and arrives on a semaphore with the arithmetic of
``triton_helpers.x_grid_barrier``: ``one_i32 = 1; one_u32 = one_i32.to(tl.uint32)`` (a Python int
assigned to a plain name is a *tensor* in Triton, so it has ``.to``), program 0 adds
``0x80000000 - (num_programs - 1)`` (an int literal past int32, i.e. uint32) and the others add 1,
through ``tl.atomic_add(sem, nb, sem="acq_rel")``.  Instead of spinning, the program whose arrival
completes the count (``old + nb == 0x80000000``) sums the peers' partials loaded as
``tl.arange(0, RSPLIT)[None, :]`` rows with ``evict_first`` and re-arms the semaphore with
``tl.atomic_xchg``, so the kernel can be launched again with the same workspace."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def arrive_last(sem):
    tl.debug_barrier()
    one_i32 = 1
    one_u32 = one_i32.to(tl.uint32)
    expected = tl.num_programs(0).to(tl.uint32)
    if tl.program_id(0) == 0:
        nb = 0x80000000 - (expected - one_u32)
    else:
        nb = one_u32
    old_arrive = tl.atomic_add(sem, nb, sem="acq_rel")
    return (old_arrive + nb) == 0x80000000


@tiles.jit
def triton_red_fused_sum_0(in_ptr0, out_ptr0, ws_ptr, sem_ptr, xnumel, r0_numel, XBLOCK: tl.constexpr,
                           R0_BLOCK: tl.constexpr, RSPLIT: tl.constexpr):
    xindex = tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rsplit_id = tl.program_id(0)
    rsplit_chunk = (r0_numel + RSPLIT - 1) // RSPLIT
    rsplit_start = rsplit_chunk * rsplit_id
    rsplit_end = rsplit_chunk * (rsplit_id + 1)
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in range(rsplit_start, rsplit_end, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = (r0_index < r0_numel) & (r0_index < rsplit_end)
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, eviction_policy="evict_first", other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask & xmask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tl.store(ws_ptr + (tl.program_id(0) * xnumel + xindex), tmp2, xmask)
    if arrive_last(sem_ptr):
        tmp2_peers = tl.load(ws_ptr + (tl.arange(0, RSPLIT)[None, :] * xnumel + xindex), xmask,
                             eviction_policy="evict_first", other=0.0)
        tmp4 = tl.sum(tmp2_peers, 1)[:, None]
        tl.store(out_ptr0 + (x0), tmp4, xmask)
        tl.atomic_xchg(sem_ptr, tl.full([], 0, tl.uint32))


def check(rng):
    rows, cols, RSPLIT = 6, 301, 4
    sem = np.zeros(1, np.uint32)
    ws = np.full((RSPLIT, rows), np.nan, np.float32)
    for _ in range(2):
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        out = np.full(rows, np.nan, np.float32)
        triton_red_fused_sum_0[(RSPLIT,)](x, out, ws, sem, rows, cols, XBLOCK=8, R0_BLOCK=32, RSPLIT=RSPLIT,
                                          launch_cooperative_grid=True)
        close(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
        assert sem[0] == 0
