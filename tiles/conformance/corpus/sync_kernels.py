"""Kernels of the ``sync`` family, in the forms real Triton programs synchronize with.

Written as Triton users write them (tutorial 05's layer-norm backward lock, Liger-Kernel's
group-norm backward scalar atomics, split-K GEMMs, decoupled look-back scans), so this module
imports only ``tiles`` and ``tiles.language``: swapping those imports for ``triton`` runs the
same kernels on Triton (how their results were checked against Triton's interpreter).
"""

from __future__ import annotations

import tiles
import tiles.language as tl


@tiles.jit
def lock_accumulate_kernel(X, DW, Lock, Tally, N, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    """Tutorial 05 (layer-norm backward): rows accumulate partial sums into one of GROUP buffers
    under a spin lock, the first writer (a count flag) storing instead of adding."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    partial = tl.load(X + row * N + cols, mask=mask, other=0.0)
    lock_id = row % GROUP
    Lock += lock_id
    Count = Lock + GROUP
    DW = DW + lock_id * N + cols
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial += tl.load(DW, mask=mask)
    tl.store(DW, partial, mask=mask)
    seen = tl.load(Tally + lock_id)  # a plain read-modify-write: only the lock makes it safe
    tl.store(Tally + lock_id, seen + 1)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@tiles.jit
def ticket_rows_kernel(Counter, Rows, Owner, BLOCK: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    """A ticket counter: each program takes a slot with one scalar atomic_add and writes its row
    there; every thread needs the returned slot (its elements' addresses depend on it)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    slot = tl.atomic_add(Counter, 1, sem=SEM, scope=SCOPE)
    inside = slot < tl.num_programs(0)  # a broken counter must not write past the buffers
    tl.store(Rows + slot * BLOCK + offs, pid * BLOCK + offs, mask=inside)
    tl.store(Owner + slot, pid, mask=inside)


@tiles.jit
def cta_counter_kernel(Counter, Olds, BLOCK: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    """Every lane of a program increments the program's own counter (contention inside one
    program, where every scope applies); the old values of a program are 0..BLOCK-1."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    old = tl.atomic_add(Counter + pid + lanes * 0, 1, sem=SEM, scope=SCOPE)
    tl.store(Olds + pid * BLOCK + lanes, old)


@tiles.jit
def split_k_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   SPLIT_K: tl.constexpr):
    """Split-K GEMM: each program multiplies one K slice of a tile and adds it into C with atomics."""
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    grid_n = tl.cdiv(N, BN)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = pid_k * BK + tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK * SPLIT_K)):
        kk = rk + k * BK * SPLIT_K
        a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(C + rm[:, None] * N + rn[None, :], acc, mask=mask)


@tiles.jit
def lookback_scan_kernel(X, Y, Flags, Aggregates, Inclusive, Ticket, N, BLOCK: tl.constexpr):
    """Decoupled look-back scan: a tile publishes its aggregate (flag 1), looks back over its
    predecessors' flags (volatile spin-waits) until one has an inclusive prefix (flag 2), then
    publishes its own.  Tiles are numbered by a ticket so that predecessors have started."""
    tile = tl.atomic_add(Ticket, 1)
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    total = tl.sum(x, axis=0)
    tl.store(Aggregates + tile, total)
    tl.debug_barrier()
    tl.atomic_xchg(Flags + tile, 1, sem="release")
    prefix = total * 0
    j = tile - 1
    while j >= 0:
        flag = tl.load(Flags + j, volatile=True)
        while flag == 0:
            flag = tl.load(Flags + j, volatile=True)
        if flag == 2:
            prefix += tl.load(Inclusive + j, volatile=True)
            j = -1
        else:
            prefix += tl.load(Aggregates + j, volatile=True)
            j -= 1
    tl.store(Inclusive + tile, prefix + total)
    tl.debug_barrier()
    tl.atomic_xchg(Flags + tile, 2, sem="release")
    tl.store(Y + offs, tl.cumsum(x, axis=0) + prefix, mask=mask)


@tiles.jit
def leader_flag_kernel(Data, Flag, Out, BLOCK: tl.constexpr, WAIT: tl.constexpr):
    """Program 0 publishes a tile and raises a flag; every other program spins on the flag (a
    volatile load, or an atomic read) before reading the tile."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(Data + offs, offs * 3 + 1)
        tl.debug_barrier()
        tl.atomic_xchg(Flag, 1, sem="release")
    else:
        if WAIT == "volatile":
            while tl.load(Flag, volatile=True) == 0:
                pass
        else:
            while tl.atomic_add(Flag, 0, sem="acquire") == 0:
                pass
    tl.store(Out + pid * BLOCK + offs, tl.load(Data + offs, volatile=True) + pid)


@tiles.jit
def norm_grad_kernel(X, W, Mean, Rstd, DY, DX, DW, DB, num_groups, hidden: tl.constexpr,
                     channels_per_group: tl.constexpr, BLOCK: tl.constexpr, dtype: tl.constexpr):
    """Liger-Kernel's group-norm backward shape: per channel of its group a program carries
    scalars through a loop (``dW += tl.sum(...)``, ``c1 += tl.sum(...)``), adds the per-channel
    sums into gradients shared by every batch row with scalar atomics, then a second loop nest
    uses ``c1`` and ``c2``."""
    batch = tl.program_id(0)
    group = tl.program_id(1)
    row = batch * num_groups * channels_per_group * hidden
    mean = tl.load(Mean + batch * num_groups + group)
    rstd = tl.load(Rstd + batch * num_groups + group)
    c1 = 0.0
    c2 = 0.0
    lanes = tl.arange(0, BLOCK)
    for channel in range(group * channels_per_group, (group + 1) * channels_per_group):
        dW = 0.0
        dB = 0.0
        w = tl.load(W + channel)
        for i in tl.range(0, hidden, BLOCK):
            offs = i + lanes
            mask = offs < hidden
            x = tl.load(X + row + channel * hidden + offs, mask=mask, other=0.0)
            dy = tl.load(DY + row + channel * hidden + offs, mask=mask, other=0.0)
            x_hat = (x - mean) * rstd
            dW += tl.sum(dy * x_hat)
            dB += tl.sum(dy)
            wdy = w * dy
            c1 += tl.sum(x_hat * wdy)
            c2 += tl.sum(wdy)
        tl.atomic_add(DW + channel, dW.to(dtype))
        tl.atomic_add(DB + channel, dB.to(dtype))
    n = hidden * channels_per_group
    c1 = c1 / n
    c2 = c2 / n
    for channel in range(group * channels_per_group, (group + 1) * channels_per_group):
        w = tl.load(W + channel)
        for i in range(0, hidden, BLOCK):
            offs = i + lanes
            mask = offs < hidden
            x = tl.load(X + row + channel * hidden + offs, mask=mask, other=0.0)
            dy = tl.load(DY + row + channel * hidden + offs, mask=mask, other=0.0)
            x_hat = (x - mean) * rstd
            dx = (w * dy - (x_hat * c1 + c2)) * rstd
            tl.store(DX + row + channel * hidden + offs, dx, mask=mask)


@tiles.jit
def loop_tickets_kernel(Counters, Seen, ITERS: tl.constexpr, TOTAL: tl.constexpr):
    """Scalar atomics inside a loop: each iteration takes a ticket from one of two counters and
    marks it (with another atomic) as seen; every ticket must be seen exactly once."""
    pid = tl.program_id(0)
    for i in range(ITERS):
        which = (pid + i) % 2
        t = tl.atomic_add(Counters + which, 1)
        tl.atomic_add(Seen + which * TOTAL + t, 1, mask=t < TOTAL)


@tiles.jit
def float_extreme_kernel(Best, X, Olds, KIND: tl.constexpr, BLOCK: tl.constexpr, USE: tl.constexpr):
    """Float atomic_max/min where most operands are negative (two negatives compared: a max on
    the integer bits gets them backwards), per lane and per program (the scalar of tl.max)."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    x = tl.load(X + pid * BLOCK + lanes)
    slots = lanes % 4
    if KIND == "max":
        old = tl.atomic_max(Best + slots, x)
        tl.atomic_max(Best + 4, tl.max(x, axis=0))
    else:
        old = tl.atomic_min(Best + slots, x)
        tl.atomic_min(Best + 4, tl.min(x, axis=0))
    if USE:
        tl.store(Olds + pid * BLOCK + lanes, old)
