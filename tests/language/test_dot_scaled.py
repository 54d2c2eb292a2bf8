"""``tl.dot_scaled`` (OCP microscaling) against a NumPy decoding of the same bytes: e2m1 packed
two to a byte (low nibble first, along K or along M/N), fp8 e4m3/e5m2, fp16/bf16, e8m0 scales
with their edge bytes (0, 127, 255 = NaN)."""

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def e2m1_unpack(packed, axis):
    low, high = E2M1[packed & 15], E2M1[packed >> 4]
    out = np.stack([low, high], axis=axis + 1)
    shape = list(packed.shape)
    shape[axis] *= 2
    return out.reshape(shape)


def e8m0(scale, tiny):
    f = (scale.astype(np.uint32) << 23).view(np.float32).copy()
    if tiny:
        f[scale == 0] = np.float32(2.0 ** -127)
    f[scale == 255] = np.nan
    return f


@tiles.jit
def scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, AM: tl.constexpr, AK: tl.constexpr, BK: tl.constexpr,
                  BN: tl.constexpr, M: tl.constexpr, N: tl.constexpr, KS: tl.constexpr, FA: tl.constexpr,
                  FB: tl.constexpr, A_KPACK: tl.constexpr, B_KPACK: tl.constexpr, SCALE_A: tl.constexpr,
                  SCALE_B: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    sa = None
    sb = None
    if SCALE_A:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * KS + tl.arange(0, KS)[None, :])
    if SCALE_B:
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * KS + tl.arange(0, KS)[None, :])
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def operand(rng, fmt, rows, cols, pack_axis):
    """Bytes/values for ``fmt`` of logical shape (rows, cols), and their float32 values."""
    if fmt == "e2m1":
        shape = [rows, cols]
        shape[pack_axis] //= 2
        raw = rng.integers(0, 256, shape, dtype=np.uint8)
        return raw, e2m1_unpack(raw, pack_axis)
    if fmt in ("e4m3", "e5m2"):
        dt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
        vals = (rng.standard_normal((rows, cols)) * 3).astype(dt)
        return vals.view(np.uint8), vals.astype(np.float32)
    dt = np.float16 if fmt == "fp16" else ml_dtypes.bfloat16
    vals = rng.standard_normal((rows, cols)).astype(dt)
    return vals, vals.astype(np.float32)


@pytest.mark.parametrize("fa, fb, a_kpack, b_kpack, m, n, k", [
    ("e2m1", "fp16", True, True, 32, 16, 64),
    ("e4m3", "e2m1", True, False, 16, 32, 64),
    ("e5m2", "e4m3", True, True, 64, 16, 32),
    ("e2m1", "e2m1", False, True, 32, 32, 128),
    ("bf16", "e5m2", True, True, 16, 16, 64),
])
def test_dot_scaled_matches_numpy(fa, fb, a_kpack, b_kpack, m, n, k):
    rng = np.random.default_rng(hash((fa, fb, m, n, k)) % 2**32)
    a_raw, a = operand(rng, fa, m, k, 1 if a_kpack else 0)
    b_raw, b = operand(rng, fb, k, n, 0 if b_kpack else 1)
    scale_a, scale_b = fa not in ("fp16", "bf16"), fb not in ("fp16", "bf16")
    sa = rng.integers(118, 136, (m, k // 32), dtype=np.uint8)
    sb = rng.integers(118, 136, (n, k // 32), dtype=np.uint8)
    sa[0, 0], sa[1, :], sa[2, -1] = 255, 0, 127  # edge bytes: NaN, 2**-127 (bf16 computation) or 0, 1
    tiny = "fp16" not in (fa, fb)
    want_a = a * np.repeat(e8m0(sa, tiny), 32, axis=1) if scale_a else a
    want_b = b * np.repeat(e8m0(sb, tiny), 32, axis=1).T if scale_b else b
    with np.errstate(invalid="ignore", over="ignore"):
        want = want_a.astype(np.float64) @ want_b.astype(np.float64)
    out = np.zeros((m, n), np.float32)
    scaled_kernel[(1,)](a_raw, sa, b_raw, sb, out, AM=a_raw.shape[0], AK=a_raw.shape[1], BK=b_raw.shape[0],
                        BN=b_raw.shape[1], M=m, N=n, KS=k // 32, FA=fa, FB=fb, A_KPACK=a_kpack, B_KPACK=b_kpack,
                        SCALE_A=scale_a, SCALE_B=scale_b)
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-5, atol=1e-5 * np.nanmax(np.abs(want)))
    if scale_a:
        assert np.isnan(out[0]).all()  # row 0 has a NaN scale (byte 255)
        # row 1's scales are byte 0: 2**-127 with a bf16 computation type (tiny, not zero), 0 with fp16
        assert (out[1] != 0).any() if tiny else (out[1] == 0).all()


def test_dot_scaled_refuses_a_wrong_scale_shape():
    a = np.zeros((16, 32), np.uint8)
    b = np.zeros((64, 16), np.float16)
    with pytest.raises(tiles.CompilationError, match="scale for an operand"):
        scaled_kernel[(1,)](a, np.zeros((16, 1), np.uint8), b, b, np.zeros((16, 16), np.float32), AM=16, AK=32,
                            BK=64, BN=16, M=16, N=16, KS=1, FA="e2m1", FB="fp16", A_KPACK=True, B_KPACK=True,
                            SCALE_A=True, SCALE_B=False)
