"""Shape ops: indexing with None, reshape, trans/permute, expand_dims, broadcast_to, join/split, cat."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def shape_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])
    n = R * C
    flat = tl.arange(0, n)
    tl.store(out_ptr + flat, tl.reshape(x, [n]))                                  # row-major reshape
    tl.store(out_ptr + n + cols[:, None] * R + rows[None, :], tl.trans(x))        # transpose
    tl.store(out_ptr + 2 * n + cols[:, None] * R + rows[None, :], x.T)
    tl.store(out_ptr + 3 * n + cols[:, None] * R + rows[None, :], tl.permute(x, (1, 0)))
    tl.store(out_ptr + 4 * n + flat, tl.ravel(x.reshape(C, R)))
    column = tl.expand_dims(tl.sum(x, axis=1), 1)                                 # [R, 1]
    tl.store(out_ptr + 5 * n + rows[:, None] * C + cols[None, :], tl.broadcast_to(column, (R, C)))
    first_row = tl.load(x_ptr + cols)
    spread = first_row[None, :] + tl.zeros([R, C], x.dtype)
    tl.store(out_ptr + 6 * n + rows[:, None] * C + cols[None, :], spread)


def test_reshape_transpose_broadcast(rng):
    x = rng.integers(-1000, 1000, (4, 8)).astype(np.int32)
    out = np.full(7 * 32, -1, np.int32)
    shape_kernel[(1,)](x, out, R=4, C=8)
    parts = out.reshape(7, 32)
    np.testing.assert_array_equal(parts[0], x.ravel())
    for i in (1, 2, 3):
        np.testing.assert_array_equal(parts[i], x.T.ravel())
    np.testing.assert_array_equal(parts[4], x.ravel())
    np.testing.assert_array_equal(parts[5], np.broadcast_to(x.sum(1, keepdims=True), (4, 8)).ravel())
    np.testing.assert_array_equal(parts[6], np.broadcast_to(x[0], (4, 8)).ravel())


@tiles.jit
def permute3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    y = tl.permute(x, 2, 0, 1)                       # shape [C, A, B]
    cc = tl.arange(0, C)[:, None, None]
    aa = tl.arange(0, A)[None, :, None]
    bb = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + cc * A * B + aa * B + bb, y)
    e = tl.expand_dims(x, (0, 4))                    # [1, A, B, C, 1]
    tl.store(out_ptr + A * B * C + tl.arange(0, A * B * C), tl.reshape(e, [A * B * C]))


def test_permute_and_expand_dims_3d(rng):
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    out = np.empty(2 * 64, np.float32)
    permute3d_kernel[(1,)](x, out, A=2, B=4, C=8)
    np.testing.assert_array_equal(out[:64], np.transpose(x, (2, 0, 1)).ravel())
    np.testing.assert_array_equal(out[64:], x.ravel())


@tiles.jit
def join_split_cat_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    pairs = tl.join(x, y)                                        # [N, 2]
    tl.store(out_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :], pairs)
    a, b = tl.split(pairs * 10)
    tl.store(out_ptr + 2 * N + offs, a)
    tl.store(out_ptr + 3 * N + offs, b)
    both = tl.cat(x, y, can_reorder=True)
    tl.store(out_ptr + 4 * N + tl.arange(0, 2 * N), tl.sort(both))  # cat may reorder: compare sorted


def test_join_split_cat(rng):
    x = rng.integers(-50, 50, 16).astype(np.int32)
    y = rng.integers(-50, 50, 16).astype(np.int32)
    out = np.empty(6 * 16, np.int32)
    join_split_cat_kernel[(1,)](x, y, out, N=16)
    np.testing.assert_array_equal(out[:32], np.stack([x, y], axis=1).ravel())
    np.testing.assert_array_equal(out[32:48], x * 10)
    np.testing.assert_array_equal(out[48:64], y * 10)
    np.testing.assert_array_equal(out[64:], np.sort(np.concatenate([x, y])))


@tiles.jit
def scalar_broadcast_kernel(out_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.broadcast_to(s * 2, BLOCK)
    a, b = tl.broadcast(offs[:, None], offs[None, :])
    tl.store(out_ptr + offs, v + tl.sum(a * 0 + b, axis=0) // BLOCK)


def test_scalar_broadcast():
    out = np.empty(16, np.int32)
    scalar_broadcast_kernel[(1,)](out, 21, BLOCK=16)
    np.testing.assert_array_equal(out, 42 + np.arange(16))


@tiles.jit
def cat_dim_kernel(x_ptr, y_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    i = tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    z = tl.cat(tl.load(x_ptr + i), tl.load(y_ptr + i), dim=DIM)
    sa, sb, sc = z.shape  # the joined axis doubles
    j = tl.arange(0, sa)[:, None, None] * sb * sc + tl.arange(0, sb)[None, :, None] * sc \
        + tl.arange(0, sc)[None, None, :]
    tl.store(z_ptr + j, z)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_cat_along_any_axis(rng, dim, dtype):
    shape = (2, 4, 8)
    x = rng.integers(-100, 100, shape).astype(dtype)
    y = rng.integers(-100, 100, shape).astype(dtype)
    x.flat[0], y.flat[-1] = np.iinfo(np.int8).min, np.iinfo(np.int8).max
    z = np.zeros(2 * x.size, dtype)
    cat_dim_kernel[(1,)](x, y, z, *shape, DIM=dim)
    np.testing.assert_array_equal(z, np.concatenate([x, y], axis=dim).ravel())


@tiles.jit
def cat_bad_kernel(x_ptr, DIM: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
    b = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    z = tl.cat(a, b, dim=DIM)
    tl.store(x_ptr, tl.sum(tl.ravel(z), axis=0))


def test_cat_checks_the_other_axes_and_the_axis():
    x = np.zeros(64, np.float32)
    with pytest.raises(tiles.CompilationError, match="equal sizes except along axis 1"):
        cat_bad_kernel[(1,)](x, DIM=1)
    with pytest.raises(tiles.CompilationError, match="invalid axis 2"):
        cat_bad_kernel[(1,)](x, DIM=2)
