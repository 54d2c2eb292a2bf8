"""Which tiles live in the MMA (tensor-core accumulator) layout, decided before lowering.

``tl.dot`` results the emitter can compute on tensor cores are held in the *MMA
layout* (``MMALayout``): the output tile is split over ``warps_m x warps_n`` warps,
each warp owns ``reps_m x reps_n`` fragments of 16x8, and lane ``l`` of a warp holds
rows ``l // 4`` and ``l // 4 + 8`` and columns ``2 * (l % 4)`` and ``+1`` of each
fragment (c0..c3), the layout of PTX ``mma.sync.m16n8k*`` accumulators.

Propagation (``_propagate``, to a fixpoint over loop-carried values): elementwise
ops whose tile operands share one fragment layout (others being splats, or index
expressions such as causal masks, recomputed at fragment coordinates) keep it;
``tl.max``/``tl.min``/``tl.sum`` along the rows of an MMA value whose warps do not
split the columns give a *row vector* (``RowLayout``: each lane holds the rows of
its fragments), which reshapes to ``(m, 1)`` and broadcasts back to any MMA tile of
the same rows for free; a ``FOR`` that yields a fragment value at some carried
position carries it in that layout.  A 16-bit MMA value feeding a DOT's A operand
is repacked in registers (two adjacent n8 accumulator fragments are one k16 A
fragment) when both layouts put all warps along M.  When any row vector appears,
every DOT uses such warps-along-M layouts (``rows_layout``); else the default
ones.  Every other use of a fragment value needs the blocked layout: such values
are converted once, right where they are defined (``Plan.blocked``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Block, Instr, Kernel, Value, walk_block
from ....core.ops import BINARY_ARITH, COMPARISON, MATH, Op
from .emitter import TensorCoreEmitter
from .remat import can_remat

WARP = 32


@dataclass(frozen=True)
class MMALayout:
    batch: int
    m: int
    n: int
    warps_m: int
    warps_n: int
    interleave: bool = False  # wgmma: rep mi of warp w holds rows mi * 16 * warps_m + 16 * w

    @property
    def reps_m(self) -> int:
        return self.m // (16 * self.warps_m)

    @property
    def warp_rows(self) -> int:
        """Distance between the first rows of consecutive warps along M."""
        return 16 if self.interleave else 16 * self.reps_m

    @property
    def rep_rows(self) -> int:
        """Distance between the first rows of a warp's consecutive fragments along M."""
        return 16 * self.warps_m if self.interleave else 16

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


@dataclass(frozen=True)
class RowLayout:
    """A row vector, shape ``(m,)`` or ``(m, 1)``, held like the rows of an MMA layout with
    ``warps_m`` warps along M and none along N: slot ``2 * mi + half`` is row
    ``warp_m * warp_rows + mi * rep_rows + half * 8 + lane // 4`` (every lane of a quad
    holds the same rows; see ``MMALayout``)."""
    m: int
    warps_m: int
    interleave: bool = False

    @property
    def reps_m(self) -> int:
        return self.m // (16 * self.warps_m)

    @property
    def per_thread(self) -> int:
        return self.reps_m * 2

    def mma(self, n: int) -> MMALayout:
        return MMALayout(1, self.m, n, self.warps_m, 1, self.interleave)


Frag = MMALayout | RowLayout


def rows_layout(shape: tuple[int, ...], warps: int) -> MMALayout | None:
    """All warps along M (as many as the rows allow; the rest compute copies)."""
    *batch, m, n = shape
    if batch or m % 16 or n % 8:
        return None
    wm = warps
    while wm > 1 and (m // 16) % wm:
        wm //= 2
    return MMALayout(1, m, n, wm, 1)


def wgmma_layout(shape: tuple[int, ...], warps: int) -> MMALayout | None:
    """Warpgroups (4 warps, 64 rows per ``wgmma``) split the tile along M as far as its 64-row
    blocks allow, and only then along N: an ``m64nNk16`` reads its 64 rows of A from local
    memory once for all N columns, so the fewest warpgroups across N read A the fewest times
    (128x256 on two warpgroups: ``m64n256`` each, 80 KB of operand reads per BLOCK_K=64 step
    instead of 96 KB as ``m64n128`` pairs).  Warpgroups beyond what the tile can use compute
    copies."""
    *batch, m, n = shape
    if batch or m % 64 or n % 16 or warps % 4:
        return None
    gm = gn = 1
    while gm * gn < warps // 4:
        if (m // 64) % (gm * 2) == 0:
            gm *= 2
        elif (n // gn) % 32 == 0:
            gn *= 2
        else:
            break
    return MMALayout(1, m, n, 4 * gm, gn, interleave=True)


@dataclass
class Plan:
    values: dict[Value, Frag] = field(default_factory=dict)  # held in a fragment layout
    blocked: set[Value] = field(default_factory=set)         # ...and also needed blocked
    dots: dict[Instr, tuple[int, int, int]] = field(default_factory=dict)  # DOT -> instruction shape
    loops: dict[Instr, set[int]] = field(default_factory=dict)    # FOR -> carried fragment positions
    frag: set[Instr] = field(default_factory=set)    # non-DOT instrs lowered on fragments
    a_regs: set[Instr] = field(default_factory=set)  # DOTs whose A operand is repacked in registers
    b_rows: dict[Instr, Value] = field(default_factory=dict)  # DOT -> x where B = trans(x): x staged as is
    absorbed: set[Instr] = field(default_factory=set)  # PERMUTEs left to the DOT they feed
    wgmma: bool = False  # every DOT runs as warpgroup MMAs (MMAExtension.warpgroup) in interleaved layouts
    add_into: dict[Instr, Value] = field(default_factory=dict)  # DOT of zero acc -> x of its `x + dot`
    fused_adds: dict[Instr, Instr] = field(default_factory=dict)  # that ADD -> the DOT that did it
    # values needed blocked only inside one branch of a fragment IF: converted there (IF, branch)
    sunk: dict[Value, tuple[Instr, int]] = field(default_factory=dict)


def dot_shape(e: TensorCoreEmitter, instr: Instr, threads: int) -> tuple[int, int, int] | None:
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


WILD = "wild"   # a loop-carried value whose layout is not known yet (optimistic)
_EW = BINARY_ARITH | COMPARISON | MATH | {Op.NEG, Op.NOT, Op.ISNAN, Op.MATH_FN, Op.FMA, Op.CAST, Op.WHERE}
_ROW_REDUCE = {"max": Op.MAXIMUM, "min": Op.MINIMUM, "sum": Op.ADD}


def _fits(lay: Frag, shape: tuple[int, ...]) -> bool:
    if isinstance(lay, RowLayout):
        return shape in ((lay.m,), (lay.m, 1))
    return shape == ((lay.m, lay.n) if lay.batch == 1 else (lay.batch, lay.m, lay.n))


def _infer(instr: Instr, lay: dict[Value, Any], splat: set[Value], dots: dict[Instr, MMALayout]) -> Any:
    op = instr.op
    if op is Op.DOT:
        return dots.get(instr)
    if len(instr.results) != 1 or instr.regions:
        return None
    shape = instr.result.type.shape
    if op in _EW:
        found, wild = None, False
        for o in instr.operands:
            lo = lay.get(o)
            if lo is WILD:
                wild = True
            elif lo is None:
                if o not in splat:
                    return None
            elif found is None:
                found = lo
            elif lo != found:
                return None
        if found is None:
            return WILD if wild else None
        return found if _fits(found, shape) else None
    if op not in (Op.REDUCE, Op.RESHAPE, Op.BROADCAST):
        return None
    src = instr.operands[0]
    lo = lay.get(src)
    if lo is WILD:
        return WILD
    if op is Op.REDUCE:
        ok = (isinstance(lo, MMALayout) and lo.batch == 1 and lo.warps_n == 1 and instr.attrs.axis == 1
              and instr.attrs.kind in _ROW_REDUCE and len(instr.operands) == 1
              and src.type.element in (D.float32, D.int32))
        return RowLayout(lo.m, lo.warps_m, lo.interleave) if ok else None  # type: ignore[union-attr]
    if not isinstance(lo, RowLayout):
        return None
    if op is Op.RESHAPE:
        return lo if _fits(lo, shape) else None
    if src.type.shape == (lo.m, 1) and len(shape) == 2 and shape[0] == lo.m and shape[1] % 8 == 0:
        return lo.mma(shape[1])
    return None


def _propagate(kernel: Kernel, dots: dict[Instr, MMALayout], guess: dict[Value, Any]) -> dict[Value, Any]:
    lay: dict[Value, Any] = {}
    splat: set[Value] = set()  # values any layout can produce in place: splats, index expressions
    defs = {r: i for i in kernel.walk() for r in i.results}

    def block(b: Block) -> None:
        for instr in b.instrs:
            if instr.op is Op.FOR:
                body = instr.regions[0]
                for arg in body.args[1:]:
                    if arg in guess:
                        lay[arg] = guess[arg]
                block(body)
                for arg, res in zip(body.args[1:], instr.results):
                    if arg in guess and guess[arg] is not WILD:
                        lay[res] = guess[arg]
                continue
            for region in instr.regions:
                block(region)
            if instr.op is Op.IF:
                _if_layouts(instr, lay, splat)
                continue
            out = _infer(instr, lay, splat, dots)
            if out is not None:
                lay[instr.result] = out
            if instr.op is Op.CONST or instr.op is Op.BROADCAST and instr.operands[0].type.numel == 1:
                splat.add(instr.result)
            elif out is None and len(instr.results) == 1 and can_remat(instr.result, defs, [24]):
                splat.add(instr.result)
    block(kernel.body)
    return lay


def _if_layouts(instr: Instr, lay: dict[Value, Any], splat: set[Value]) -> None:
    """An IF's result keeps the fragment layout its branches yield it in, where each yields it
    in that layout or as a splat (``acc = tl.zeros(...)`` after storing the tile)."""
    for r, ys in zip(instr.results, zip(*(region.yields for region in instr.regions))):
        found = {lay[y] for y in ys if lay.get(y) is not None and lay[y] is not WILD}
        if len(found) > 1 or not all(y in lay or y in splat for y in ys):
            continue
        lay[r] = found.pop() if found else WILD


def _layouts(kernel: Kernel, dots: dict[Instr, MMALayout]) -> dict[Value, Any]:
    fors = [i for i in kernel.walk() if i.op is Op.FOR]
    guess: dict[Value, Any] = {a: WILD for f in fors for a in f.regions[0].args[1:]}
    for _ in range(8):
        lay = _propagate(kernel, dots, guess)
        new = {}
        for f in fors:
            body = f.regions[0]
            for arg, y in zip(body.args[1:], body.yields):
                if lay.get(y) is not None:
                    new[arg] = lay[y]
        if new == guess:
            break
        guess = new
    final = _propagate(kernel, dots, {a: v for a, v in guess.items() if v is not WILD})
    return {v: lo for v, lo in final.items() if lo is not WILD}


WGMMA_INPUTS = frozenset({"float16", "bfloat16", "float32", "int8", "uint8", "float8e4nv", "float8e5"})
WGMMA_ONLY = frozenset({"float8e4nv", "float8e5"})  # no mma.sync rule: the serial DOT when wgmma does not fit


def wgmma_fits(e: TensorCoreEmitter, dot: Instr, warps: int) -> bool:
    """Operands wgmma takes (fp16/bf16, tf32, 8-bit ints), K a multiple of one instruction's
    32 bytes of K, and a tile warpgroups can split (64 rows each)."""
    a = dot.operands[0]
    s = a.type.element.itemsize
    return (e.wgmma_ok() and a.type.element.name in WGMMA_INPUTS and a.type.shape[-1] * s % 32 == 0
            and wgmma_layout(dot.result.type.shape, warps) is not None)


def build_plan(kernel: Kernel, e: TensorCoreEmitter, threads: int) -> Plan:
    plan = Plan()
    warps = threads // WARP
    instrs = list(kernel.walk())
    for instr in instrs:
        if instr.op is Op.DOT:
            shape = dot_shape(e, instr, threads)
            if shape is not None:
                plan.dots[instr] = shape
    if not plan.dots:
        return plan
    plan.wgmma = all(wgmma_fits(e, i, warps) for i in plan.dots)
    if not plan.wgmma:
        plan.dots = {i: s for i, s in plan.dots.items() if i.operands[0].type.element.name not in WGMMA_ONLY}
        if not plan.dots:
            return plan
    lays: dict[Value, Any] = {}
    rows = {i: wgmma_layout(i.result.type.shape, warps) if plan.wgmma
            else rows_layout(i.result.type.shape, warps) for i in plan.dots}
    if all(lo is not None for lo in rows.values()):
        lays = _layouts(kernel, rows)  # type: ignore[arg-type]
    if not any(isinstance(lo, RowLayout) for lo in lays.values()):
        dflt = {i: wgmma_layout(i.result.type.shape, warps) if plan.wgmma
                else choose_mma_layout(i.result.type.shape, warps) for i in plan.dots}
        lays = _layouts(kernel, dflt)  # type: ignore[arg-type]
    plan.values = lays
    uses: dict[Value, int] = {}
    defs: dict[Value, Instr] = {}
    for instr in instrs:
        for v in instr.operands:
            uses[v] = uses.get(v, 0) + 1
        for region in instr.regions:
            for y in region.yields:
                uses[y] = uses.get(y, 0) + 1
        for r in instr.results:
            defs[r] = instr
    for instr in instrs:
        if instr.op is Op.FOR:
            body = instr.regions[0]
            pos = {i for i, a in enumerate(body.args[1:]) if a in lays}
            if pos:
                plan.loops[instr] = pos
        elif instr.op is not Op.DOT and not instr.regions and len(instr.results) == 1 and instr.result in lays:
            plan.frag.add(instr)
        elif instr in plan.dots:
            _dot_operands(plan, instr, defs, uses)
    _fuse_adds(plan, kernel.body, defs, uses)
    for instr in instrs:
        for idx, v in enumerate(instr.operands):
            if v in lays and not frag_use(plan, instr, idx):
                plan.blocked.add(v)
        for region in instr.regions:
            for i, y in enumerate(region.yields):
                if y not in lays:
                    continue
                if instr.op is Op.IF:
                    same = lays.get(instr.results[i]) == lays[y]
                else:
                    same = instr.op is Op.FOR and lays.get(region.args[1 + i]) == lays[y]
                if not same:
                    plan.blocked.add(y)
    for y in kernel.body.yields:
        if y in lays:
            plan.blocked.add(y)
    _sink_into_branches(plan, instrs)
    return plan


def _sink_into_branches(plan: Plan, instrs: list[Instr]) -> None:
    """Move to ``Plan.sunk`` the blocked values whose only non-fragment uses are inside one
    branch of an IF with fragment results (Triton's flattened persistent matmul storing its fp32
    accumulator under ``if ki == k_tiles - 1``): converted at the top of that branch instead of
    where they are defined, every iteration."""
    ifs = [f for f in instrs if f.op is Op.IF and any(r in plan.values for r in f.results)]
    if not ifs:
        return
    yielded = {y for i in instrs for r in i.regions for k, y in enumerate(r.yields) if not frag_yield(plan, i, r, k)}
    for f in ifs:
        for b, region in enumerate(f.regions):
            inner = list(walk_block(region))
            inside = set(inner)
            defined = {r for i in inner for r in i.results}
            # in program order (dict keys), so that the copies, and the PTX, come out the same every run
            read = dict.fromkeys(o for i in inner for o in i.operands if o in plan.blocked and o not in defined)
            for v in read:
                if v in yielded or v in plan.sunk:
                    continue
                outside = [(i, k) for i in instrs if i not in inside for k, o in enumerate(i.operands) if o is v]
                if all(frag_use(plan, i, k) for i, k in outside):
                    plan.blocked.discard(v)
                    plan.sunk[v] = (f, b)


def frag_yield(plan: Plan, instr: Instr, region: Block, k: int) -> bool:
    """Whether ``region``'s ``k``-th yield is taken in its fragment layout (no blocked copy)."""
    y = region.yields[k]
    if y not in plan.values:
        return True
    if instr.op is Op.IF:
        return plan.values.get(instr.results[k]) == plan.values[y]
    return instr.op is Op.FOR and plan.values.get(region.args[1 + k]) == plan.values[y]


def _is_zero(v: Value, defs: dict[Value, Instr]) -> bool:
    d = defs.get(v)
    while d is not None and d.op is Op.BROADCAST:
        d = defs.get(d.operands[0])
    return d is not None and d.op is Op.CONST and d.attrs.value == 0


def _fuse_adds(plan: Plan, block: Block, defs: dict[Value, Instr], uses: dict[Value, int]) -> None:
    """``x + tl.dot(a, b)`` (float32, fragments, x computed before the DOT) accumulates into
    x: the DOT starts from x instead of zeros and the ADD is its result (Triton folds the
    same way)."""
    pos = {r: at for at, instr in enumerate(block.instrs) for r in instr.results}
    for instr in block.instrs:
        for region in instr.regions:
            _fuse_adds(plan, region, defs, uses)
        if instr.op is not Op.ADD or instr not in plan.frag:
            continue
        for i, v in enumerate(instr.operands):
            dot, x = defs.get(v), instr.operands[1 - i]
            if (dot is not None and dot in plan.dots and dot not in plan.add_into and uses.get(v) == 1
                    and v in pos and pos.get(x, -1) < pos[v] and x is not v
                    and dot.result.type.element == D.float32 and _is_zero(dot.operands[2], defs)
                    and plan.values.get(x) == plan.values.get(v)):
                plan.add_into[dot] = x
                plan.fused_adds[instr] = dot
                break


def _dot_operands(plan: Plan, dot: Instr, defs: dict[Value, Instr], uses: dict[Value, int]) -> None:
    a, b, _ = dot.operands
    sixteen = a.type.element.itemsize == 2 and plan.dots[dot][2] == 16
    if not sixteen and not plan.wgmma:
        return
    la, lo = plan.values.get(a), plan.values[dot.result]
    if (sixteen and isinstance(la, MMALayout) and isinstance(lo, MMALayout) and la.batch == lo.batch == 1
            and la.warps_n == lo.warps_n == 1
            and (la.m, la.warps_m, la.interleave) == (lo.m, lo.warps_m, lo.interleave)):
        plan.a_regs.add(dot)
    p = defs.get(b)
    if (p is not None and p.op is Op.PERMUTE and tuple(p.attrs.order) == (1, 0) and uses.get(b) == 1
            and b not in plan.values and p.operands[0] not in plan.values):
        plan.b_rows[dot] = p.operands[0]
        plan.absorbed.add(p)


def frag_use(plan: Plan, instr: Instr, idx: int) -> bool:
    v = instr.operands[idx]
    if instr.op is Op.DOT:
        if instr not in plan.dots:
            return False
        return idx == 2 and plan.values.get(v) == plan.values[instr.result] or idx == 0 and instr in plan.a_regs
    if instr.op is Op.FOR:
        body = instr.regions[0]
        return idx >= 3 and plan.values.get(body.args[idx - 2]) == plan.values[v]
    return instr in plan.frag
