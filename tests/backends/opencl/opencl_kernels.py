"""Kernels run on the interpreter and on OpenCL by the tests of this folder."""

import tiles
import tiles.language as tl
from tiles.conformance.corpus.elementwise import binary_kernel, fma_where_kernel  # noqa: F401  (shared with the corpus)


@tiles.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    if OP == "neg":
        r = -x
    elif OP == "not":
        r = ~x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "isnan":
        r = x != x
    else:
        r = getattr(tl, OP)(x)
    tl.store(out_ptr + offs, r, mask=mask)


@tiles.jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BITCAST: tl.constexpr, RTZ: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if RTZ:
        y = x.to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz")
    else:
        y = x.to(out_ptr.dtype.element_ty, bitcast=BITCAST)
    tl.store(out_ptr + offs, y, mask=mask)


@tiles.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                  KIND: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    if KIND == "sum":
        r = tl.sum(x, axis=AXIS)
    elif KIND == "max":
        r = tl.max(x, axis=AXIS)
    elif KIND == "min":
        r = tl.min(x, axis=AXIS)
    elif KIND == "xor":
        r = tl.xor_sum(x, axis=AXIS)
    else:
        r = tl.reduce(x, AXIS, _pick_larger)
    if AXIS == 0:
        o = tl.arange(0, N)
    else:
        o = tl.arange(0, M)
    tl.store(out_ptr + o, r)
    if AXIS == 0:
        tl.store(idx_ptr + o, tl.argmax(x, axis=AXIS))
    else:
        tl.store(idx_ptr + o, tl.argmin(x, axis=AXIS))


@tiles.jit
def _pick_larger(a, b):
    return tl.where(a > b, a, b)


@tiles.jit
def full_reduce_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(tl.where(offs < n, x, float("-inf")), axis=0))
    tl.store(out_ptr + 2, tl.argmax(tl.where(offs < n, x, float("-inf")), axis=0).to(tl.float32))


@tiles.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=float("-inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)


@tiles.jit
def scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + idx)
    tl.store(out_ptr + idx, tl.cumsum(x, axis=AXIS, reverse=REVERSE))


@tiles.jit
def shape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + idx)
    if OP == "trans":
        out = tl.trans(x)
        tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], out)
    elif OP == "reshape":
        flat = tl.reshape(x, (M * N,))
        tl.store(out_ptr + tl.arange(0, M * N), flat * 2)
    elif OP == "broadcast":
        col = tl.load(x_ptr + tl.arange(0, M) * N)
        tl.store(out_ptr + idx, x + col[:, None])
    elif OP == "join":
        a, b = tl.split(tl.join(x, x + 1))
        tl.store(out_ptr + idx, a * 10 + b)
    elif OP == "cat":
        c = tl.cat(x, x, can_reorder=True)
        tl.store(out_ptr + tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :], c)
    else:
        order = tl.sort(x, descending=OP == "sort_desc")
        tl.store(out_ptr + idx, order)


@tiles.jit
def loops_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    k = 0
    total = 0
    while k < n:
        total += k
        k += 1
    if total > 10:
        acc = acc * 2
    else:
        acc = acc - 1
    for j in range(n, 0, -2):
        total += j
    tl.store(out_ptr + offs, acc + total)


@tiles.jit
def atomic_kernel(counts_ptr, fsum_ptr, ival_ptr, idx_ptr, vals_ptr, old_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bucket = tl.load(idx_ptr + offs, mask=mask)
    v = tl.load(vals_ptr + offs, mask=mask)
    tl.atomic_add(counts_ptr + bucket, 1, mask=mask)
    tl.atomic_add(fsum_ptr + bucket, v, mask=mask)
    tl.atomic_max(ival_ptr + bucket, offs, mask=mask)
    old = tl.atomic_add(counts_ptr + 8, 1)
    tl.store(old_ptr + pid, old)


@tiles.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PREC: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm * N + rn, c)


@tiles.jit
def rand_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.randint(seed, offs)
    u = tl.rand(seed, offs)
    tl.store(out_ptr + offs, r, mask=offs < n)
    tl.store(out_ptr + n + offs, u.to(tl.uint32, bitcast=True), mask=offs < n)


@tiles.jit
def fp8_kernel(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x.to(tl.float8e5).to(tl.float32))


@tiles.jit
def scalar_kernel(x_ptr, out_ptr, flag, scale):
    x = tl.load(x_ptr)
    y = x * scale
    if flag:
        y = y + 1
    tl.store(out_ptr, y)


@tiles.jit
def histogram_gather_kernel(x_ptr, hist_ptr, g_ptr, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(hist_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))
    src = offs * 3
    tl.store(g_ptr + offs, tl.gather(src, (N - 1) - offs, 0))


@tiles.jit
def guarded_reductions_kernel(x_ptr, out_ptr, stats_ptr, n_blocks, D, MAX_BLOCKS: tl.constexpr,
                              BLOCK_D: tl.constexpr, LOOP: tl.constexpr):
    """Liger's attention residuals' shape: each iteration of a ``tl.static_range`` guarded by a
    run-time ``if`` around reductions, here also in a nested ``if``, an ``else`` and (``LOOP``) a
    loop inside the ``if``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    idx = tl.arange(0, MAX_BLOCKS)
    sums = tl.zeros((MAX_BLOCKS,), dtype=tl.float32)
    best = tl.full((), float("-inf"), dtype=tl.float32)
    best_at = tl.full((), -1, dtype=tl.int32)
    h = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in tl.static_range(0, MAX_BLOCKS):
        at = (row * MAX_BLOCKS + i) * D + cols
        if i < n_blocks:
            x = tl.load(x_ptr + at, mask=mask, other=0.0)
            s = tl.sum(x, axis=0)
            sums = tl.where(idx == i, s, sums)
            masked = tl.where(mask, x, float("-inf"))
            if tl.max(masked, axis=0) > best:
                best = tl.max(masked, axis=0)
                best_at = i * BLOCK_D + tl.argmax(masked, axis=0)
            if LOOP:
                for j in range(i, n_blocks):
                    h += tl.sum(tl.where(cols == j, x, 0.0), axis=0) * x
            tl.store(out_ptr + at, x - s / D, mask=mask)
        else:
            h = h * 0.5 + tl.max(tl.where(mask, h, float("-inf")), axis=0)
    stats = stats_ptr + row * (MAX_BLOCKS + 3)
    tl.store(stats + idx, sums)
    tl.store(stats + MAX_BLOCKS, best)
    tl.store(stats + MAX_BLOCKS + 1, best_at.to(tl.float32))
    tl.store(stats + MAX_BLOCKS + 2, tl.sum(tl.where(mask, h, 0.0), axis=0))
