"""Atomics give the result of the sequential order (program id, then lane)."""

from __future__ import annotations

import numpy as np
import pytest
from irb import KB

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.ops import Op
from tiles.interp import executor, interpret


def scatter_atomic_kernel(kind, dtype, block, used=True):
    """old[i] = atomic_kind(target + idx[i], val[i]) for i < n."""
    k = KB(f"atomic_{kind}")
    t, idx, val, old = (k.ptr("target", dtype), k.ptr("idx", dt.int32), k.ptr("val", dtype),
                        k.ptr("old", dtype))
    n = k.scalar("n", dt.int32)
    offs = k.offsets(block)
    m = k.bin(Op.LT, offs, n)
    where = k.load(k.addptr(idx, offs), m)
    v = k.load(k.addptr(val, offs), m)
    r = k.atomic(kind, k.addptr(t, where), v, m, used=used)
    if used:
        k.store(k.addptr(old, offs), r, m)
    return k.kernel()


def sequential(kind, target, idx, val):
    target = target.copy()
    old = np.zeros_like(val)
    fn = {"add": lambda a, b: a + b, "max": np.fmax, "min": np.fmin, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor, "xchg": lambda a, b: b}[kind]
    with np.errstate(all="ignore"):
        for i, (j, v) in enumerate(zip(idx, val)):
            old[i] = target[j]
            target[j] = fn(target[j], v)
    return target, old


CASES = [("add", dt.float32), ("add", dt.int32), ("add", dt.float16), ("add", dt.uint8),
         ("max", dt.float32), ("min", dt.int64), ("and", dt.uint32), ("or", dt.int16),
         ("xor", dt.int32), ("xchg", dt.float32)]


@pytest.mark.parametrize("kind,dtype", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("hot", [1, 3, 50])
def test_atomics_match_a_sequential_order(kind, dtype, hot):
    rng = np.random.default_rng(hot)
    n = 300
    idx = rng.integers(0, hot, n).astype(np.int32)
    if dtype.is_floating:
        val = rng.standard_normal(n).astype(dtype.np)
        val[::17] = np.nan if kind in ("max", "min") else val[::17]
        target = rng.standard_normal(hot).astype(dtype.np)
    else:
        val = rng.integers(dtype.min(), dtype.max(), n, endpoint=True, dtype=dtype.np)
        target = rng.integers(dtype.min(), dtype.max(), hot, endpoint=True, dtype=dtype.np)
    want_t, want_old = sequential(kind, target, idx, val)
    for used in (True, False):
        t = target.copy()
        old = np.zeros_like(val)
        interpret(scatter_atomic_kernel(kind, dtype, 32, used), ((n + 31) // 32,), [t, idx, val, old, n])
        np.testing.assert_array_equal(t, want_t)
        if used:
            np.testing.assert_array_equal(old, want_old)


def test_contended_counter_returns_each_ticket_once():
    """Every program takes a ticket from one counter; the tickets are 0..P-1 in program order."""
    k = KB("tickets")
    counter, out = k.ptr("counter", dt.int32), k.ptr("out", dt.int32)
    ticket = k.atomic("add", counter, k.const(1, dt.int32))
    k.store(k.addptr(out, k.pid()), ticket)
    c = np.zeros(1, np.int32)
    o = np.full(1000, -1, np.int32)
    interpret(k.kernel(), (1000,), [c, o])
    assert c[0] == 1000 and o.tolist() == list(range(1000))


def test_float_add_contention_rounds_in_program_order():
    k = KB("fsum")
    acc, x, out = k.ptr("acc", dt.float32), k.ptr("x", dt.float32), k.ptr("out", dt.float32)
    v = k.load(k.addptr(x, k.pid()))
    k.store(k.addptr(out, k.pid()), k.atomic("add", acc, v))
    xs = (np.random.default_rng(0).standard_normal(512) * 1e4).astype(np.float32)
    a = np.zeros(1, np.float32)
    o = np.zeros(512, np.float32)
    interpret(k.kernel(), (512,), [a, xs, o])
    running = np.float32(0)
    for i, v in enumerate(xs):
        assert o[i] == running
        running = np.float32(running + v)
    assert a[0] == running


def spin_lock_kernel():
    """while atomic_cas(lock, 0, 1) == 1: pass; count += 1 (plain load/store); xchg(lock, 0)."""
    k = KB("spin_lock")
    lock, count = k.ptr("lock", dt.int32), k.ptr("count", dt.int32)
    zero, one = k.const(0, dt.int32), k.const(1, dt.int32)

    def cond(dummy):
        old = k.op(Op.ATOMIC_CAS, lock, zero, one, attrs=at.Atomic("cas", False))
        return k.bin(Op.EQ, old, one)

    k.while_([zero], cond, lambda dummy: [dummy])
    k.store(count, k.bin(Op.ADD, k.load(count), one))
    k.atomic("xchg", lock, zero, used=False)
    return k.kernel()


def test_spin_lock_does_not_deadlock():
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    interpret(spin_lock_kernel(), (64,), [lock, count])
    assert count[0] == 64 and lock[0] == 0


def test_cas_compares_bits_and_returns_old():
    k = KB("cas")
    t, cmp, val, old = (k.ptr("t", dt.float32), k.ptr("cmp", dt.float32), k.ptr("val", dt.float32),
                        k.ptr("old", dt.float32))
    offs = k.arange(4)
    r = k.op(Op.ATOMIC_CAS, k.addptr(t, offs), k.load(k.addptr(cmp, offs)),
             k.load(k.addptr(val, offs)), attrs=at.Atomic("cas", False))
    k.store(k.addptr(old, offs), r)
    tv = np.array([1.0, np.nan, 0.0, 2.0], np.float32)
    cv = np.array([1.0, np.nan, -0.0, 3.0], np.float32)
    o = np.zeros(4, np.float32)
    interpret(k.kernel(), (1,), [tv, cv, np.full(4, 9.0, np.float32), o])
    assert tv[0] == 9 and tv[1] == 9 and tv[2] == 0.0 and tv[3] == 2.0  # NaN bits equal; -0 != +0
    assert o[0] == 1.0 and np.isnan(o[1])


def test_atomics_across_chunks(monkeypatch):
    monkeypatch.setattr(executor, "CHUNK_ELEMENTS", 64)
    executor._PLANS.clear()
    test_contended_counter_returns_each_ticket_once()
    executor._PLANS.clear()


def test_spin_wait_on_an_earlier_programs_flag_ends():
    """``while tl.load(flag, volatile=True) == 0: pass`` waiting on a flag an earlier program raises
    (here with a plain store, no atomic in the kernel): the dead-code pass keeps the loop (a
    volatile load is an effect, as in Triton) and the interpreter runs such a kernel one program
    at a time, in order, as Triton's interpreter does (checked with Triton 3.9, TRITON_INTERPRET=1:
    every program reads program 0's tile, whichever branch comes first)."""
    import tiles
    import tiles.language as tl

    @tiles.jit
    def wait_for_leader(data, flag, out, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        if pid > 0:  # the waiting branch first: a batched run of the programs would spin forever
            while tl.load(flag, volatile=True) == 0:
                pass
        else:
            tl.store(data + offs, offs * 3 + 1)
            tl.store(flag, 1)
        tl.store(out + pid * BLOCK + offs, tl.load(data + offs, volatile=True) + pid)

    data, flag, out = np.zeros(16, np.int32), np.zeros(1, np.int32), np.full(8 * 16, -1, np.int32)
    assert "while(" in wait_for_leader.ir(data, flag, out, BLOCK=16)
    wait_for_leader[(8,)](data, flag, out, BLOCK=16, backend="interpreter")
    expected = (np.arange(16) * 3 + 1)[None, :] + np.arange(8)[:, None]
    np.testing.assert_array_equal(out.reshape(8, 16), expected)
