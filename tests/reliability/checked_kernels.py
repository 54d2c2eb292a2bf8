"""Kernels for the checked-mode tests: each compiled with ``debug=True`` (checked mode) and,
where a test compares, once more without it (``PLAIN``)."""

import tiles
import tiles.language as tl


def both(fn):
    """(checked, plain) versions of one kernel."""
    return tiles.jit(debug=True)(fn), tiles.jit(debug=False)(fn)


def _copy(x, out, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs + shift), mask=offs < n)  # the load is unmasked


def _store_at(out, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs + shift, (offs + 1).to(tl.float32), mask=offs < n)


def _masked_far(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    far = tl.where(offs < n, offs, offs * 1000003)  # masked-off lanes point far away
    tl.store(out + far, tl.load(x + far, mask=offs < n, other=-1.0) * 2.0, mask=offs < n)


def _atomic_add(counts, idx, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx + offs, mask=offs < n, other=0)
    tl.atomic_add(counts + i, 1, mask=offs < n)


def _atomic_cas(lock, slot):
    tl.atomic_cas(lock + slot, 0, 7)


def _loop_sum(x, out, n_tiles, BLOCK: tl.constexpr):
    """A pointer carried through the loop: each iteration moves it one tile on."""
    p = x + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n_tiles):
        acc += tl.load(p)
        p += BLOCK
    tl.store(out + tl.arange(0, BLOCK), acc)


def _select_source(x, y, out, use_y, n, BLOCK: tl.constexpr):
    """A pointer that is one of two arguments (WHERE on pointers)."""
    offs = tl.arange(0, BLOCK)
    src = tl.where(use_y != 0, y, x)
    tl.store(out + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def _scalar_store(out, at, value):
    tl.store(out + at, value)


def _rows(x, out, n_rows, n_cols, stride, BR: tl.constexpr, BC: tl.constexpr):
    """A 2D tile over a 2D grid: programs (i, j) copy block (i, j)."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    c = tl.program_id(1) * BC + tl.arange(0, BC)[None, :]
    keep = (r < n_rows) & (c < n_cols)
    tl.store(out + r * n_cols + c, tl.load(x + r * stride + c, mask=keep), mask=keep)


def _assert_positive(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=1.0)
    tl.device_assert(v > 0, "x must be positive")


def _from_int(x, out, BLOCK: tl.constexpr):
    """A pointer rebuilt from an integer: its origin is unknown, so it stays unchecked."""
    p = x.to(tl.int64).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(p + offs))


def _vector_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


def _softmax(x, out, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


def _matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        ma = (rm[:, None] < M) & (rk[None, :] + k < K)
        mb = (rk[:, None] + k < K) & (rn[None, :] < N)
        acc += tl.dot(tl.load(pa, mask=ma, other=0.0), tl.load(pb, mask=mb, other=0.0),
                      input_precision="ieee")
        pa += BK
        pb += BK * N
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


copy, copy_plain = both(_copy)
store_at, _ = both(_store_at)
masked_far, masked_far_plain = both(_masked_far)
atomic_add, atomic_add_plain = both(_atomic_add)
atomic_cas, _ = both(_atomic_cas)
loop_sum, loop_sum_plain = both(_loop_sum)
select_source, _ = both(_select_source)
scalar_store, _ = both(_scalar_store)
rows, _ = both(_rows)
assert_positive, _ = both(_assert_positive)
from_int, _ = both(_from_int)
vector_add, vector_add_plain = both(_vector_add)
softmax, softmax_plain = both(_softmax)
matmul, matmul_plain = both(_matmul)
