"""Atomics: every kind, old values, masks, contention across programs."""

import itertools

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def atomic_kernel(ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + tl.program_id(0) * BLOCK + offs, mask=mask)
    if KIND == "add":
        old = tl.atomic_add(ptr + offs, v, mask=mask)
    elif KIND == "max":
        old = tl.atomic_max(ptr + offs, v, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(ptr + offs, v, mask=mask)
    elif KIND == "and":
        old = tl.atomic_and(ptr + offs, v, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(ptr + offs, v, mask=mask)
    elif KIND == "xor":
        old = tl.atomic_xor(ptr + offs, v, mask=mask)
    else:
        old = tl.atomic_xchg(ptr + offs, v, mask=mask)
    tl.store(old_ptr + tl.program_id(0) * BLOCK + offs, old, mask=mask)


UFUNCS = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor, "xchg": lambda a, b: b}


@pytest.mark.parametrize("kind", sorted(UFUNCS))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float32])
def test_atomics_contended_by_programs(rng, kind, dtype):
    if dtype == np.float32 and kind in ("and", "or", "xor"):
        pytest.skip("bitwise atomics need integers")
    programs, block, n = 5, 16, 13
    if dtype == np.float32:
        vals = rng.integers(-50, 50, (programs, block)).astype(dtype)  # small ints: sums are exact
    else:
        vals = rng.integers(0 if dtype == np.uint32 else -1000, 1000, (programs, block)).astype(dtype)
    init = rng.integers(0, 100, block).astype(dtype)
    target = init.copy()
    old = np.zeros((programs, block), dtype)
    atomic_kernel[(programs,)](target, vals, old, n, KIND=kind, BLOCK=block)
    fn = UFUNCS[kind]
    np.testing.assert_array_equal(target[n:], init[n:])   # masked lanes untouched
    # the old values and the final one are those of *some* sequential order of the programs
    # (for xchg the order decides the final value: programs run concurrently on a GPU)
    for lane in range(n):
        assert any(replays(fn, init[lane], vals[list(order), lane], old[list(order), lane], target[lane])
                   for order in itertools.permutations(range(programs))), f"lane {lane}"


def replays(fn, start, values, olds, final):
    current = np.array([start])
    for v, o in zip(values, olds):
        if current[0] != o:
            return False
        current = fn(current, np.array([v]))
    return bool(current[0] == final)


@tiles.jit
def counter_kernel(counter_ptr, ticket_ptr):
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.store(ticket_ptr + tl.program_id(0), ticket)


def test_atomic_add_tickets_are_a_permutation():
    counter = np.zeros(1, np.int32)
    tickets = np.full(37, -1, np.int32)
    counter_kernel[(37,)](counter, tickets)
    assert counter[0] == 37
    np.testing.assert_array_equal(np.sort(tickets), np.arange(37))


@tiles.jit
def cas_kernel(flag_ptr, winner_ptr, old_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_cas(flag_ptr, 0, pid + 1)
    tl.store(old_ptr + pid, old)
    if old == 0:
        tl.store(winner_ptr, pid)


def test_atomic_cas_has_one_winner():
    flag = np.zeros(1, np.int32)
    winner = np.full(1, -1, np.int32)
    olds = np.full(9, -1, np.int32)
    cas_kernel[(9,)](flag, winner, olds)
    w = winner[0]
    assert 0 <= w < 9 and flag[0] == w + 1
    assert olds[w] == 0
    np.testing.assert_array_equal(np.delete(olds, w), w + 1)


@tiles.jit
def sum_by_atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0))


def test_sum_by_atomic_add(rng):
    x = rng.integers(-1000, 1000, 10_000).astype(np.int64)
    out = np.zeros(1, np.int64)
    sum_by_atomic_kernel[(tiles.cdiv(x.size, 256),)](x, out, x.size, BLOCK=256)
    assert out[0] == x.sum()


@tiles.jit
def float_atomic_max_kernel(ptr, val_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_max(ptr + offs, tl.load(val_ptr + tl.program_id(0) * BLOCK + offs))
    tl.atomic_min(ptr + BLOCK + offs, tl.load(val_ptr + tl.program_id(0) * BLOCK + offs))


def test_float_atomic_max_min_with_negative_values(rng):
    vals = -np.abs(rng.standard_normal((4, 8))).astype(np.float32) - 1
    target = np.concatenate([np.full(8, -1e30), np.full(8, 1e30)]).astype(np.float32)
    float_atomic_max_kernel[(4,)](target, vals, BLOCK=8)
    np.testing.assert_array_equal(target[:8], vals.max(0))
    np.testing.assert_array_equal(target[8:], vals.min(0))
