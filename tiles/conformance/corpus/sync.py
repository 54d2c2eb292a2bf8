"""Synchronization between programs: spin locks, first-writer flags, ticket counters, split-K
atomics, decoupled look-back scans, spin-waits on another program's flag, scalar atomics in
loops and after loop-carried scalars, every ``sem`` and ``scope``, float max/min of negatives.

The kernels (``sync_kernels.py``) are the forms real Triton programs use.  Every output is one
every order of the programs agrees on: sums of small integers (exact in float too), the final
value under a lock, tickets that must form a permutation; checks compare what the order leaves
free by its invariant.  Grids contend (64 to 512 programs on a few addresses), with
``num_warps`` 1 and 4 (a scalar atomic must run once per program, not once per thread, and its
result must reach every thread).  Each case's results were checked against Triton 3.9's
interpreter (the kernels run unchanged under ``import triton``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tiles.language as tl

from ..case import Case, case
from ..compare import EXACT, tol
from ..profiles import Profile
from . import sync_kernels as K

FAMILY = "sync"
WARPS = (1, 4)
SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("gpu", "cta", "sys")
Check = Callable[[list, list, list], "str | None"]


def _small_ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    """Integer values in [-8, 8]: every float sum of them is exact, so every order agrees."""
    return rng.integers(-8, 9, shape).astype(dtype)


# ---------------------------------------------------------------- spin lock (tutorial 05)

def _lock_case(warps: int, rows: int = 256, group: int = 4, n: int = 100) -> Case:
    def make(rng: np.random.Generator) -> list:
        # DW starts as a sentinel: the first writer of each group must store, not add
        return [_small_ints(rng, (rows, n)), np.full((group, n), 1e6, np.float32),
                np.zeros(2 * group, np.int32), np.zeros(group, np.int32), n]
    return case(FAMILY, f"spin_lock_accumulate[rows={rows},group={group},warps={warps}]",
                K.lock_accumulate_kernel, make, (rows,), {1: EXACT, 2: EXACT, 3: EXACT},
                constexprs={"GROUP": group, "BLOCK": 128, "num_warps": warps})


# ---------------------------------------------------------------- ticket counters

def _tickets_form_a_permutation(block: int) -> Check:
    def check(inputs: list, ref: list, got: list) -> str | None:
        counter, rows, owner = got[0], got[1], got[2]
        programs = owner.size
        if counter[0] != programs:
            return f"the ticket counter ends at {counter[0]}, expected {programs} (one ticket per program)"
        if sorted(owner.tolist()) != list(range(programs)):
            dup = [int(v) for v in np.unique(owner) if (owner == v).sum() > 1][:8]
            return f"tickets are not a permutation of the programs: programs {dup} hold several slots"
        expected = owner[:, None] * block + np.arange(block)
        bad = np.argwhere(rows.reshape(programs, block) != expected)
        if bad.size:
            s, lane = bad[0]
            return (f"slot {s} (program {owner[s]}) lane {lane} holds {rows.reshape(programs, block)[s, lane]}, "
                    f"expected {expected[s, lane]}: a thread wrote with a wrong slot (the atomic's result "
                    f"did not reach every thread); {len(bad)} elements wrong")
        return None
    return check


def _ticket_case(sem: str, scope: str, warps: int, programs: int = 256, block: int = 64) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [np.zeros(1, np.int32), np.full(programs * block, -1, np.int32), np.full(programs, -1, np.int32)]
    return case(FAMILY, f"ticket_rows[{sem},{scope},warps={warps}]", K.ticket_rows_kernel, make,
                (programs,), {}, constexprs={"BLOCK": block, "SEM": sem, "SCOPE": scope, "num_warps": warps},
                check=_tickets_form_a_permutation(block))


def _olds_per_program(block: int) -> Check:
    def check(inputs: list, ref: list, got: list) -> str | None:
        if not np.array_equal(got[0], ref[0]):
            return f"counters end at {got[0][:8].tolist()}..., expected {ref[0][:8].tolist()}..."
        olds = np.sort(got[1].reshape(-1, block), axis=1)
        bad = np.flatnonzero((olds != np.arange(block)).any(axis=1))
        if bad.size:
            return (f"program {bad[0]}'s lanes got old values {olds[bad[0]][:12].tolist()}..., expected each of "
                    f"0..{block - 1} once ({bad.size} programs wrong)")
        return None
    return check


def _cta_case(sem: str, scope: str, warps: int, programs: int = 64, block: int = 128) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [np.zeros(programs, np.int32), np.full(programs * block, -1, np.int32)]
    return case(FAMILY, f"program_counter[{sem},{scope},warps={warps}]", K.cta_counter_kernel, make,
                (programs,), {}, constexprs={"BLOCK": block, "SEM": sem, "SCOPE": scope, "num_warps": warps},
                check=_olds_per_program(block))


def _loop_tickets_case(warps: int, programs: int = 128, iters: int = 6) -> Case:
    total = programs * iters

    def make(rng: np.random.Generator) -> list:
        return [np.zeros(2, np.int32), np.zeros(2 * total, np.int32)]
    return case(FAMILY, f"tickets_in_loop[warps={warps}]", K.loop_tickets_kernel, make, (programs,),
                {0: EXACT, 1: EXACT}, constexprs={"ITERS": iters, "TOTAL": total, "num_warps": warps})


# ---------------------------------------------------------------- split-K, look-back, flags

def _split_k_case(warps: int, m: int = 50, n: int = 36, k: int = 300, split: int = 8) -> Case:
    bm, bn, bk = 16, 16, 16

    def make(rng: np.random.Generator) -> list:
        return [_small_ints(rng, (m, k)), _small_ints(rng, (k, n)), _small_ints(rng, (m, n)), m, n, k]
    grid = (-(-m // bm) * -(-n // bn), split)
    return case(FAMILY, f"split_k_atomic_add[{m}x{n}x{k},split={split},warps={warps}]", K.split_k_kernel,
                make, grid, {2: EXACT},
                constexprs={"BM": bm, "BN": bn, "BK": bk, "SPLIT_K": split, "num_warps": warps})


def _lookback_case(warps: int, tiles_: int = 96, block: int = 32) -> Case:
    n = tiles_ * block - 5

    def make(rng: np.random.Generator) -> list:
        return [rng.integers(-1000, 1000, n).astype(np.int32), np.zeros(n, np.int32),
                np.zeros(tiles_, np.int32), np.zeros(tiles_, np.int32), np.zeros(tiles_, np.int32),
                np.zeros(1, np.int32), n]
    return case(FAMILY, f"lookback_scan[tiles={tiles_},warps={warps}]", K.lookback_scan_kernel, make,
                (tiles_,), {1: EXACT, 2: EXACT, 4: EXACT, 5: EXACT}, constexprs={"BLOCK": block, "num_warps": warps})


def _leader_case(wait: str, warps: int, programs: int = 64, block: int = 64) -> Case:
    def make(rng: np.random.Generator) -> list:
        return [np.zeros(block, np.int32), np.zeros(1, np.int32), np.zeros(programs * block, np.int32)]
    return case(FAMILY, f"spin_wait_flag[{wait},warps={warps}]", K.leader_flag_kernel, make, (programs,),
                {0: EXACT, 1: EXACT, 2: EXACT}, constexprs={"BLOCK": block, "WAIT": wait, "num_warps": warps})


def _norm_grad_case(warps: int, hidden: int, per_group: int, batch: int = 64, groups: int = 2) -> Case:
    channels = groups * per_group

    def make(rng: np.random.Generator) -> list:
        # whole numbers and halves: every product and sum that reaches DW and DB is exact
        x = _small_ints(rng, (batch, channels, hidden))
        return [x, _small_ints(rng, (channels,)), rng.integers(-2, 3, (batch, groups)).astype(np.float32),
                np.full((batch, groups), 0.5, np.float32), _small_ints(rng, (batch, channels, hidden)),
                np.zeros_like(x), np.zeros(channels, np.float32), np.zeros(channels, np.float32),
                groups]
    # DX divides by the group's size: within a few float32 roundings of values up to ~1e4
    name = f"scalar_atomic_after_loops[hidden={hidden},channels_per_group={per_group},warps={warps}]"
    return case(FAMILY, name, K.norm_grad_kernel, make,
                (batch, groups), {5: tol(1e-5, 1e-2), 6: EXACT, 7: EXACT},
                constexprs={"hidden": hidden, "channels_per_group": per_group,
                            "BLOCK": min(16, 1 << (hidden - 1).bit_length()),
                            "dtype": tl.float32, "num_warps": warps})


# ---------------------------------------------------------------- float max/min of negatives

def _extreme_olds(kind: str) -> Check:
    def check(inputs: list, ref: list, got: list) -> str | None:
        if not np.array_equal(got[0], ref[0]):
            return f"final {got[0].tolist()}, expected {ref[0].tolist()}"
        olds, start = got[2], inputs[0][0]
        final = got[0][np.arange(olds.shape[1]) % 4]
        inside = (olds >= start) & (olds <= final) if kind == "max" else (olds <= start) & (olds >= final)
        if not inside.all():
            i = np.argwhere(~inside)[0]
            return f"old value {olds[tuple(i)]} at {tuple(int(v) for v in i)} lies outside [start, final]"
        return None
    return check


def _extreme_case(kind: str, dtype: type, use: bool, warps: int, programs: int = 128, block: int = 32) -> Case:
    def make(rng: np.random.Generator) -> list:
        x = -rng.integers(1, 2000, (programs, block)).astype(dtype) / 8  # negatives, many within one binade
        x[rng.random(x.shape) < 0.05] *= -1  # a few positives (not in the max's slots' reach below)
        if kind == "max":
            x = -np.abs(x)  # every operand negative: the max is the negative closest to zero
        x[0, 0] = -0.0
        start = -1e4 if kind == "max" else 1e4
        return [np.full(5, start, dtype), x, np.zeros((programs, block), dtype)]
    name = f"float_{kind}_negatives[{np.dtype(dtype).name},{'used' if use else 'unused'},warps={warps}]"
    return case(FAMILY, name, K.float_extreme_kernel, make, (programs,), {} if use else {0: EXACT},
                constexprs={"KIND": kind, "BLOCK": block, "USE": use, "num_warps": warps},
                check=_extreme_olds(kind) if use else None)


def cases(profile: Profile) -> list[Case]:
    out: list[Case] = []
    # every sem on a counter shared by every program (scopes gpu and sys); scope cta where the
    # contention is inside one program
    for w in WARPS:
        out.append(_lock_case(w))
        out.append(_loop_tickets_case(w))
        out.append(_split_k_case(w))
        out.append(_lookback_case(w))
        out += [_leader_case(wait, w) for wait in ("volatile", "atomic")]
        out.append(_norm_grad_case(w, 3, 1))  # Liger's group norm, 1 channel per group
        out.append(_norm_grad_case(w, 37, 2))
    out += [_ticket_case(sem, "gpu", w) for sem, w in zip(SEMS, (4, 1, 4, 1))]
    out += [_ticket_case("acq_rel", "sys", 4), _ticket_case("relaxed", "sys", 1)]
    out += [_cta_case(sem, "cta", 4) for sem in SEMS] + [_cta_case("acq_rel", "sys", 1)]
    out += [_extreme_case(kind, dt, use, w) for kind in ("max", "min") for dt in (np.float32, np.float64)
            for use, w in ((False, 4), (True, 1))]
    return out
