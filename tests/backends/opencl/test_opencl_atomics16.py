"""16-bit atomics on OpenCL (a compare-and-swap loop on the 32-bit word): many programs on the same
few elements, both halves of a word at once, against NumPy and the interpreter."""

from collections import Counter

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

KINDS = ["add", "max", "min", "and", "or", "xor", "xchg"]
TARGETS, LANES, ACTIVE = 5, 8, 7  # lanes hit elements offs % 5 (0 and 1 twice); lane 7 is masked off
PROGRAMS, ROUNDS = 48, 40  # enough that pocl's threads overlap (a single try per update loses some)


@tiles.jit
def _rmw16(x_ptr, v_ptr, old_ptr, KIND: tl.constexpr, TARGETS: tl.constexpr, LANES: tl.constexpr,
           ACTIVE: tl.constexpr, ROUNDS: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, LANES)
    p = x_ptr + offs % TARGETS
    m = offs < ACTIVE
    for r in range(ROUNDS):
        at = (pid * ROUNDS + r) * LANES + offs
        v = tl.load(v_ptr + at)
        if KIND == "add":
            old = tl.atomic_add(p, v, mask=m)
        elif KIND == "max":
            old = tl.atomic_max(p, v, mask=m)
        elif KIND == "min":
            old = tl.atomic_min(p, v, mask=m)
        elif KIND == "and":
            old = tl.atomic_and(p, v, mask=m)
        elif KIND == "or":
            old = tl.atomic_or(p, v, mask=m)
        elif KIND == "xor":
            old = tl.atomic_xor(p, v, mask=m)
        else:
            old = tl.atomic_xchg(p, v, mask=m)
        tl.store(old_ptr + at, old, mask=m)


UFUNCS = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}


def _apply(kind, old, v):
    """The value ``kind`` leaves where ``old`` was, given ``v`` (NumPy, wrapping)."""
    return v if kind == "xchg" else UFUNCS[kind](old, v)


def _values(dtype, shape, rng):
    """Random non-zero values with the type's extremes among them (uint16: above 32767 too)."""
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    v[v == 0] = 1
    v.flat[:4] = [info.min or 1, info.max, info.max // 2 + 1, info.max - 1]
    return v


def _launch(kind, dtype, start, v, backend):
    x, old = start.copy(), np.zeros_like(v)
    _rmw16[(PROGRAMS,)](x, v, old, KIND=kind, TARGETS=TARGETS, LANES=LANES, ACTIVE=ACTIVE, ROUNDS=ROUNDS,
                        backend=backend)
    return x, old


@pytest.mark.parametrize("dtype", [np.int16, np.uint16])
@pytest.mark.parametrize("kind", KINDS)
def test_rmw_on_both_halves_of_a_word(rng, kind, dtype):
    """Final values as the sequential reference; every returned old is one the chain of updates
    passed through (the updates' results and the start are the olds and the final, as multisets);
    element 5 shares element 4's word and no program touches it."""
    start = _values(dtype, TARGETS + 1, rng)
    v = _values(dtype, (PROGRAMS * ROUNDS, LANES), rng)
    if kind in ("and", "or"):  # mostly one bit off (on), so the values keep changing
        v = np.where(rng.random(v.shape) < 0.9, ~(1 << rng.integers(0, 16, v.shape)) if kind == "and"
                     else 1 << rng.integers(0, 16, v.shape), v).astype(dtype)
    if kind == "add":
        v[::3, :2] = np.iinfo(dtype).max  # the sums wrap many times
    x, old = _launch(kind, dtype, start, v, "opencl")
    ref, _ = _launch(kind, dtype, start, v, "interpreter")
    assert x[TARGETS] == start[TARGETS]
    lane = np.arange(LANES)
    for e in range(TARGETS):
        hits = (lane % TARGETS == e) & (lane < ACTIVE)
        olds, vals = old[:, hits].ravel(), v[:, hits].ravel()
        if kind == "xchg":
            assert x[e] in vals
        else:
            seq = UFUNCS[kind].reduce(np.concatenate([start[e:e + 1], vals]), dtype=dtype)
            assert x[e] == seq, (e, x[e], seq)
        made = Counter(_apply(kind, olds, vals).tolist()) + Counter([start[e].item()])
        assert made == Counter(olds.tolist()) + Counter([x[e].item()]), e
    if kind != "xchg":
        np.testing.assert_array_equal(x, ref)


@tiles.jit
def _cas_counter(c_ptr, got_ptr, tries_ptr, ROUNDS: tl.constexpr):
    """Each program adds one to element 0, ROUNDS times, with a compare-and-swap loop, and one to
    element 1 (the other half of the word) with atomic_add at each try, counting its tries."""
    pid = tl.program_id(0)
    for r in range(ROUNDS):
        expected = tl.load(c_ptr, volatile=True)
        seen = tl.atomic_cas(c_ptr, expected, expected + 1)
        tries = 1
        while seen != expected:
            tl.atomic_add(c_ptr + 1, 1)
            tries += 1
            expected = seen
            seen = tl.atomic_cas(c_ptr, expected, expected + 1)
        tl.atomic_add(c_ptr + 1, 1)
        tl.store(got_ptr + pid * ROUNDS + r, expected)
        tl.store(tries_ptr + pid * ROUNDS + r, tries)


# (type, first value, rounds of 64 programs): the floats' counts stay exact integers
COUNTERS = {"int16": (np.int16, 32767 - 1000, 64), "uint16": (np.uint16, 65535 - 1000, 64),
            "float16": (np.float16, -1024.0, 32), "bfloat16": (ml_dtypes.bfloat16, -128.0, 4)}


@pytest.mark.parametrize("name", list(COUNTERS))
def test_cas_counter_hands_out_each_value_once(name):
    """The olds the programs got are start, start + 1, ... each once (wrapping for the integers;
    -1 + 1 gives +0.0, which a compare with 0.0 matches); element 1 counted every try (modulo 2**16
    for the integers: a GPU's contention makes more tries than int16 holds; the floats' count stops
    growing where adding one no longer changes it)."""
    dtype, first, rounds = COUNTERS[name]
    programs = 64
    total = programs * rounds
    want = np.arange(total + 1, dtype=np.int64) + int(first)
    want = want.astype(np.int64).astype(dtype) if np.issubdtype(dtype, np.integer) else want.astype(dtype)
    for backend in ("opencl", "interpreter"):
        c = np.array([first, 0], dtype)
        got = np.zeros(total, dtype)
        tries = np.zeros(total, np.int32)
        _cas_counter[(programs,)](c, got, tries, ROUNDS=rounds, backend=backend)
        assert sorted(got.tolist()) == sorted(want[:-1].tolist()), backend
        assert c[0] == want[-1] and tries.min() >= 1, (backend, c)
        if np.issubdtype(dtype, np.integer):
            assert int(c[1]) % 2**16 == int(tries.sum()) % 2**16, (backend, c, tries.sum())
        else:
            assert float(c[1]) >= total, (backend, c)


@tiles.jit
def _cas_lanes(x_ptr, cmp_ptr, v_ptr, old_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    old = tl.atomic_cas(x_ptr + offs, tl.load(cmp_ptr + offs), tl.load(v_ptr + offs))
    tl.store(old_ptr + offs, old)


def _float_cases(dtype):
    """(memory, cmp) bit patterns: signed zeros both ways, quiet and signalling NaNs, ones, denormals."""
    nan, sig, top = (0x7E01, 0x7C01, 0x7BFF) if dtype == np.float16 else (0x7FC1, 0x7F81, 0x7F7F)
    x = [0x0000, 0x8000, 0x8000, 0x0000, nan, nan, sig, nan | 0x8000, 0x3C00, 0xBC00, sig, nan, 0x3C00,
         0x0001, 0x8001, top]
    cmp = [0x0000, 0x8000, 0x0000, 0x8000, nan, sig, sig, nan, 0x3C00, 0x3C00, nan, sig, 0xBC00,
           0x0001, 0x0001, top]
    return np.array(x, np.uint16).view(dtype), np.array(cmp, np.uint16).view(dtype)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.int16, np.uint16])
def test_cas_compares_bits(rng, dtype):
    """Floats: -0.0 is not 0.0 and a NaN matches only its own bit pattern; neighbours in a word
    swap or not independently of each other."""
    n = 16
    if np.issubdtype(dtype, np.integer):
        x = _values(dtype, n, rng)
        cmp = np.where(rng.random(n) < 0.5, x, x ^ dtype(1)).astype(dtype)
    else:
        x, cmp = _float_cases(dtype)
    v = (np.arange(n, dtype=np.uint16) * 0x1111 + 0x0123).view(dtype)  # NaNs among them stay as they are
    u = np.uint16
    hit = x.view(u) == cmp.view(u)
    assert 0 < hit.sum() < n
    for backend in ("opencl", "interpreter"):
        xs, old = x.copy(), np.zeros(n, dtype)
        _cas_lanes[(1,)](xs, cmp, v, old, N=n, backend=backend)
        np.testing.assert_array_equal(xs.view(u), np.where(hit, v.view(u), x.view(u)), err_msg=backend)
        np.testing.assert_array_equal(old.view(u), x.view(u), err_msg=backend)

