"""Philox-4x32-10 and Triton's conversions to floats, in NumPy: the reference for random kernels.

Checked against Triton 3.9's tl.randint4x / tl.rand / tl.randn under
TRITON_INTERPRET=1 (see test_compat_random.py for the known-answer vectors).
"""

import numpy as np

KEY_A, KEY_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
ROUND_A, ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)


def _mul(a: np.uint64, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wide = b.astype(np.uint64) * a
    return (wide >> np.uint64(32)).astype(np.uint32), (wide & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def philox(seed: int, c0, c1=0, c2=0, c3=0, rounds: int = 10):
    """Four uint32 streams for 64-bit ``seed`` and counters (broadcast like Triton's tl.philox)."""
    c = [np.asarray(v).astype(np.uint32) for v in np.broadcast_arrays(c0, c1, c2, c3)]
    k0 = np.uint32(seed & 0xFFFFFFFF)
    k1 = np.uint32((seed >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            hi_b, lo_b = _mul(ROUND_B, c[2])
            hi_a, lo_a = _mul(ROUND_A, c[0])
            c = [hi_b ^ c[1] ^ k0, lo_b, hi_a ^ c[3] ^ k1, lo_a]
            k0 = np.uint32(k0 + KEY_A)
            k1 = np.uint32(k1 + KEY_B)
    return c


def uniform(bits: np.ndarray) -> np.ndarray:
    """Triton's uint32 -> float32 in [0, 1)."""
    x = bits.astype(np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return (x.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


def rand(seed: int, offsets) -> np.ndarray:
    return uniform(philox(seed, offsets)[0])
