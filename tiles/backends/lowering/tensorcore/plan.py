"""Which tiles live in the MMA (tensor-core accumulator) layout, decided before lowering.

``tl.dot`` results the emitter can compute on tensor cores are held in the *MMA
layout* (``MMALayout``): the output tile is split over ``warps_m x warps_n`` warps,
each warp owns ``reps_m x reps_n`` fragments of 16x8, and lane ``l`` of a warp holds
rows ``l // 4`` and ``l // 4 + 8`` and columns ``2 * (l % 4)`` and ``+1`` of each
fragment (c0..c3), the layout of PTX ``mma.sync.m16n8k*`` accumulators.

Propagation: a ``FOR`` that yields an MMA value at some carried position carries
that position in the MMA layout too (its body argument and its result), so an
accumulator stays in registers across the K loop with no conversion per
iteration.  Every other use of an MMA value (stores, elementwise ops, reductions,
``IF``/``WHILE`` yields...) needs the blocked layout: such values are converted
once, right where they are defined (``Plan.blocked``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....core.dtypes import DType
from ....core.ir import Instr, Kernel, Value
from ....core.ops import Op
from ..emitter import Emitter

WARP = 32


@dataclass(frozen=True)
class MMALayout:
    batch: int
    m: int
    n: int
    warps_m: int
    warps_n: int

    @property
    def reps_m(self) -> int:
        return self.m // (16 * self.warps_m)

    @property
    def reps_n(self) -> int:
        return self.n // (8 * self.warps_n)

    @property
    def per_thread(self) -> int:
        return self.batch * self.reps_m * self.reps_n * 4

    def slot(self, b: int, mi: int, ni: int, c: int) -> int:
        return ((b * self.reps_m + mi) * self.reps_n + ni) * 4 + c


def choose_mma_layout(shape: tuple[int, ...], warps: int) -> MMALayout | None:
    """Warps split the output tile, doubling the side whose per-warp extent is larger.
    Warps beyond what the tile can use compute copies (they agree bit for bit)."""
    *batch, m, n = shape
    if m % 16 or n % 8 or len(batch) > 1:
        return None
    wm = wn = 1
    while wm * wn < warps:
        can_m = (m // 16) % (wm * 2) == 0
        can_n = (n // 8) % (wn * 2) == 0
        if can_m and (m // wm >= n // wn or not can_n):
            wm *= 2
        elif can_n:
            wn *= 2
        else:
            break
    return MMALayout(batch[0] if batch else 1, m, n, wm, wn)


@dataclass
class Plan:
    values: dict[Value, MMALayout] = field(default_factory=dict)  # held in the MMA layout
    blocked: set[Value] = field(default_factory=set)              # ...and also needed blocked
    dots: dict[Instr, tuple[int, int, int]] = field(default_factory=dict)  # DOT -> instruction shape
    loops: dict[Instr, set[int]] = field(default_factory=dict)    # FOR -> carried MMA positions


def dot_shape(e: Emitter, instr: Instr, threads: int) -> tuple[int, int, int] | None:
    a, b, acc = instr.operands
    adt, out = a.type.element, acc.type.element
    if not isinstance(adt, DType) or adt != b.type.element or e.target.warp_size != WARP:
        return None
    if threads % WARP:
        return None
    shape = e.mma_shape(adt, out, instr.attrs.input_precision)
    if shape is None or a.type.shape[-1] % shape[2]:
        return None
    if choose_mma_layout(acc.type.shape, threads // WARP) is None:
        return None
    return shape


def build_plan(kernel: Kernel, e: Emitter, threads: int) -> Plan:
    plan = Plan()
    warps = threads // WARP
    instrs = list(kernel.walk())
    for instr in instrs:
        if instr.op is Op.DOT:
            shape = dot_shape(e, instr, threads)
            if shape is not None:
                lay = choose_mma_layout(instr.result.type.shape, warps)
                assert lay is not None
                plan.dots[instr] = shape
                plan.values[instr.result] = lay
    changed = True
    while changed:
        changed = False
        for instr in instrs:
            if instr.op is not Op.FOR:
                continue
            body = instr.regions[0]
            for i, y in enumerate(body.yields):
                res = instr.results[i]
                if y in plan.values and res not in plan.values:
                    lay = plan.values[y]
                    plan.values[res] = plan.values[body.args[1 + i]] = lay
                    plan.loops.setdefault(instr, set()).add(i)
                    changed = True
    for instr in instrs:
        for idx, v in enumerate(instr.operands):
            if v in plan.values and not _mma_use(plan, instr, idx):
                plan.blocked.add(v)
        for region in instr.regions:
            mma_pos = plan.loops.get(instr, set()) if instr.op is Op.FOR else set()
            for i, y in enumerate(region.yields):
                if y in plan.values and i not in mma_pos:
                    plan.blocked.add(y)
    for y in kernel.body.yields:
        if y in plan.values:
            plan.blocked.add(y)
    return plan


def _mma_use(plan: Plan, instr: Instr, idx: int) -> bool:
    if instr.op is Op.DOT:
        return idx == 2 and instr in plan.dots
    if instr.op is Op.FOR:
        return idx >= 3 and idx - 3 in plan.loops.get(instr, set())
    return False
