"""Atomics under contention: many programs updating a few addresses.

Final memory is compared bit for bit where every order gives one result (integer
ops, float adds of small integers); returned old values only as a multiset or by
an invariant, since the order the programs win in is the backend's business.
"""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT, MULTISET
from ..profiles import Profile

PROGRAMS = 64
SLOTS = 4


@tiles.jit
def atomic_kernel(counter_ptr, val_ptr, old_ptr, KIND: tl.constexpr, SLOTS: tl.constexpr,
                  PROGRAMS: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, SLOTS)
    v = tl.load(val_ptr + pid * SLOTS + lanes)
    p = counter_ptr + lanes
    mask = (pid + lanes) % 5 != 0
    if KIND == "add":
        old = tl.atomic_add(p, v, mask=mask)
    elif KIND == "max":
        old = tl.atomic_max(p, v, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(p, v, mask=mask)
    elif KIND == "and":
        old = tl.atomic_and(p, v, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(p, v, mask=mask)
    elif KIND == "xor":
        old = tl.atomic_xor(p, v, mask=mask)
    else:
        old = tl.atomic_xchg(p, v)
    tl.store(old_ptr + lanes * PROGRAMS + pid, old, mask=mask | (KIND == "xchg"))


@tiles.jit
def ticket_kernel(counter_ptr, ticket_ptr):
    pid = tl.program_id(0)
    tl.store(ticket_ptr + pid, tl.atomic_add(counter_ptr, 1))


@tiles.jit
def cas_kernel(lock_ptr, old_ptr):
    pid = tl.program_id(0)
    tl.store(old_ptr + pid, tl.atomic_cas(lock_ptr, 0, pid + 1))


def _values(rng: np.random.Generator, kind: str, d: DType) -> np.ndarray:
    shape = (PROGRAMS, SLOTS)
    if kind == "add":
        return rng.integers(-3 if d.is_signed or d.is_floating else 0, 4, shape).astype(d.np)
    if d.is_floating:
        return rng.standard_normal(shape).astype(d.np)
    return rng.integers(int(max(d.min(), -1000)), int(min(d.max(), 1000)), shape).astype(d.np)


def _xchg_conserves(inputs: list, ref: list, got: list) -> str | None:
    """Every value ends up exactly once: in memory or among the returned old values."""
    for lane in range(SLOTS):
        before = sorted([inputs[0][lane].item()] + list(inputs[1][:, lane].tolist()))
        after = sorted([got[0][lane].item()] + list(got[2][lane].tolist()))
        if before != after:
            return f"atomic_xchg lost or duplicated values at slot {lane}"
    return None


def _atomic_case(kind: str, d: DType) -> Case:
    def make(rng: np.random.Generator) -> list:
        start = np.zeros(SLOTS, d.np) if kind != "and" else np.full(SLOTS, -1).astype(d.np)
        return [start, _values(rng, kind, d), np.zeros((SLOTS, PROGRAMS), d.np)]
    order_free = kind in ("add", "max", "min", "and", "or", "xor")
    outputs = {0: EXACT} if order_free else {}
    return case("atomics", f"{kind}_contention[{d}]", atomic_kernel, make, (PROGRAMS,), outputs,
                constexprs={"KIND": kind, "SLOTS": SLOTS, "PROGRAMS": PROGRAMS},
                check=None if order_free else _xchg_conserves)


def _cas_single_winner(inputs: list, ref: list, got: list) -> str | None:
    lock, olds = got[0][0].item(), got[1]
    winners = np.flatnonzero(olds == 0)
    if len(winners) != 1:
        return f"atomic_cas: {len(winners)} programs saw the lock free (expected exactly 1)"
    if lock != winners[0] + 1 or not (olds[olds != 0] == lock).all():
        return f"atomic_cas: winner {winners[0]} but the lock holds {lock}; old values {olds.tolist()}"
    return None


def cases(profile: Profile) -> list[Case]:
    out = []
    for d in profile.sweep((D.int32, D.uint32, D.int64, D.float32, D.float16, D.float64)):
        for kind in ("add", "max", "min", "and", "or", "xor", "xchg"):
            if kind in ("and", "or", "xor") and not d.is_int:
                continue
            out.append(_atomic_case(kind, d))
    out.append(case("atomics", "ticket_counter[int32]", ticket_kernel,
                    lambda rng: [np.zeros(1, np.int32), np.zeros(PROGRAMS, np.int32)], (PROGRAMS,),
                    {0: EXACT, 1: MULTISET}))
    out.append(case("atomics", "cas_lock[int32]", cas_kernel,
                    lambda rng: [np.zeros(1, np.int32), np.full(PROGRAMS, -1, np.int32)], (PROGRAMS,),
                    {}, check=_cas_single_winner))
    return out
