"""Checked mode for compiled backends: bounds-check every memory access in the IR itself.

``instrument(kernel)`` returns a kernel with hidden parameters appended after the user's:
for each pointer parameter ``p`` two int64 scalars, the lowest valid byte offset from ``p``
and one past the highest (the extent of the argument's own view, as the interpreter sees it),
then one ``*int64`` error record.  Every LOAD, STORE, ATOMIC and ATOMIC_CAS whose pointer
derives from pointer parameters (through ADDPTR, broadcasts and reshapes, WHERE, loop-carried
and IF-merged values) gets its byte offset from each candidate parameter computed with
PTR_TO_INT arithmetic; lanes outside every candidate's extent (or misaligned) are taken out
of the access mask (ATOMIC_CAS, which has no mask, is pointed at a scratch slot of the error
record instead), and the first bad lane of the whole launch fills the record:

    record[0] number of bad lanes     record[1] site index + 1 (0: no error)
    record[2..4] program id x, y, z   record[5] byte offset from the first candidate

``DEVICE_ASSERT`` becomes the same recording (site kind ``device_assert``) and is removed.
Pointers whose origin is unknown (INT_TO_PTR, pointers loaded from memory) stay unchecked.
The host side (hidden values, reading the record, the error) is ``runtime/checked_launch.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from . import attrs as A
from .descriptors import desugar_descriptors
from .dtypes import DType, PointerType, int32, int64
from .ir import Block, Instr, Kernel, Loc, Param, TileType, Value
from .kinds import AtomicKind
from .ops import Op
from .origins import PointerOrigins, is_pointer
from .typerules import infer

RECORD_SLOTS = 8
SCRATCH_SLOT = 7  # where a bad ATOMIC_CAS lane is redirected


@dataclass(frozen=True)
class Site:
    """One checked access (or device_assert): what the host needs to explain an error."""

    kind: str  # "load", "store", "atomic add", "atomic_cas", "device_assert"
    loc: Loc
    origins: tuple[str, ...]  # names of the pointer parameters the pointer may derive from
    size: int  # bytes per lane
    message: str = ""


@dataclass
class CheckPlan:
    """What ``instrument`` added: the user's pointer parameters (whose extents follow the
    user parameters, two int64 each, in this order), and the sites by record index."""

    pointer_params: list[str]
    sites: list[Site] = field(default_factory=list)
    unchecked: list[Loc] = field(default_factory=list)  # accesses whose pointer origin is unknown


def _access_size(ptr: Value) -> int:
    dt = ptr.type.dtype
    assert isinstance(dt, PointerType)
    elem = dt.element
    if isinstance(elem, PointerType):
        return 8
    return max(1, elem.bits // 8)


class _Instrumenter:
    def __init__(self, kernel: Kernel, origins: PointerOrigins) -> None:
        self.kernel = kernel
        self.origins = origins
        names = [p.name for p in kernel.params]
        self.pointer_index = [i for i, p in enumerate(kernel.params) if is_pointer(p.value)]
        self.plan = CheckPlan([names[i] for i in self.pointer_index])
        self.extent: dict[int, tuple[Value, Value]] = {}
        hidden: list[Param] = []
        for i in self.pointer_index:
            name = names[i]
            lo = Value(TileType(int64), f"checked_lo_{name}")
            hi = Value(TileType(int64), f"checked_hi_{name}")
            hidden += [Param(lo.name, lo), Param(hi.name, hi)]
            self.extent[i] = (lo, hi)
        self.record = Value(TileType(PointerType(int64)), "checked_record")
        hidden.append(Param(self.record.name, self.record, 16))
        self.hidden = hidden
        self.out: list[Instr] = []
        self.loc = kernel.loc
        self.prologue: dict[Any, Value] = {}
        self.prologue_instrs: list[Instr] = []

    # -- emitting ------------------------------------------------------------
    def emit(self, op: Op, operands: list[Value], attrs: Any = None) -> Value:
        (t,) = infer(op, [v.type for v in operands], attrs)
        r = Value(t)
        self.out.append(Instr(op, tuple(operands), (r,), attrs, (), self.loc))
        return r

    def const(self, value: bool | int, dtype: DType, shape: tuple[int, ...]) -> Value:
        return self.emit(Op.CONST, [], A.Const(value, dtype, shape))

    def splat(self, v: Value, shape: tuple[int, ...]) -> Value:
        return v if v.type.shape == shape else self.emit(Op.BROADCAST, [v], A.Shape(shape))

    def once(self, key: Any, op: Op, operands: list[Value], attrs: Any = None) -> Value:
        """A scalar computed once at the top of the kernel (parameters and program ids)."""
        v = self.prologue.get(key)
        if v is None:
            saved, self.out = self.out, self.prologue_instrs
            v = self.prologue[key] = self.emit(op, operands, attrs)
            self.out = saved
        return v

    # -- the checks ----------------------------------------------------------
    def in_bounds(self, ptr: Value, origins: frozenset[int], size: int) -> tuple[Value, Value]:
        """(lanes inside some candidate's extent, byte offsets from the first candidate)."""
        shape = ptr.type.shape
        addr = self.emit(Op.PTR_TO_INT, [ptr])
        ok: Value | None = None
        first_offset: Value | None = None
        for k in sorted(origins):
            param = self.kernel.params[k].value
            base = self.once(("base", k), Op.PTR_TO_INT, [param])
            lo, hi = self.extent[k]
            last = self.once(("last", k, size), Op.SUB,
                             [hi, self.once(("size", size), Op.CONST, [], A.Const(size, int64))])
            off = self.emit(Op.SUB, [addr, self.splat(base, shape)])
            inside = self.emit(Op.AND, [self.emit(Op.GE, [off, self.splat(lo, shape)]),
                                        self.emit(Op.LE, [off, self.splat(last, shape)])])
            if size > 1:
                low_bits = self.emit(Op.AND, [off, self.const(size - 1, int64, shape)])
                aligned = self.emit(Op.EQ, [low_bits, self.const(0, int64, shape)])
                inside = self.emit(Op.AND, [inside, aligned])
            ok = inside if ok is None else self.emit(Op.OR, [ok, inside])
            first_offset = first_offset if first_offset is not None else off
        assert ok is not None and first_offset is not None
        return ok, first_offset

    def record_error(self, bad: Value, site: Site, offset: Value | None) -> None:
        """The first bad lane of the launch writes the record; every bad lane counts."""
        self.plan.sites.append(site)
        index = len(self.plan.sites)
        shape = bad.type.shape
        count_ptr = self.splat(self.record, shape)
        old = self.emit(Op.ATOMIC, [count_ptr, self.const(1, int64, shape), bad],
                        A.Atomic(AtomicKind.ADD, True, "relaxed"))
        first = self.emit(Op.AND, [bad, self.emit(Op.EQ, [old, self.const(0, int64, shape)])])
        pids = [self.once(("pid", axis), Op.CAST,
                          [self.once(("pid32", axis), Op.PROGRAM_ID, [], A.Axis(axis))],
                          A.Cast(int64)) for axis in range(3)]
        fields = [self.const(index, int64, shape), *(self.splat(p, shape) for p in pids),
                  offset if offset is not None else self.const(0, int64, shape)]
        for slot, value in enumerate(fields, start=1):
            at = self.once(("slot", slot), Op.ADDPTR,
                           [self.record, self.once(("index", slot), Op.CONST, [], A.Const(slot, int32))])
            self.out.append(Instr(Op.STORE, (self.splat(at, shape), value, first), (),
                                  A.Store(True), (), self.loc))

    def access(self, instr: Instr) -> None:
        ptr = instr.operands[0]
        origins = self.origins.get(ptr)
        if not origins:  # None (unknown) or empty (cannot happen for a real pointer)
            self.plan.unchecked.append(instr.loc)
            self.out.append(instr)
            return
        self.loc = instr.loc
        size = _access_size(ptr)
        shape = ptr.type.shape
        names = tuple(self.kernel.params[k].name for k in sorted(origins))
        ok, offset = self.in_bounds(ptr, origins, size)
        ops = list(instr.operands)
        mask_at = {Op.LOAD: 1, Op.STORE: 2, Op.ATOMIC: 2}.get(instr.op)
        masked = mask_at is not None and bool(getattr(instr.attrs, "masked", False))
        active = ops[mask_at] if masked and mask_at is not None else None
        bad = self.emit(Op.NOT, [ok])
        if active is not None:
            bad = self.emit(Op.AND, [active, bad])
        if instr.op is Op.ATOMIC_CAS:
            scratch_at = self.once(("slot", SCRATCH_SLOT), Op.ADDPTR, [
                self.record, self.once(("index", SCRATCH_SLOT), Op.CONST, [],
                                       A.Const(SCRATCH_SLOT, int32))])
            scratch = self.once(("scratch", ptr.type.dtype), Op.BITCAST, [scratch_at],
                                A.Cast(ptr.type.dtype))
            ops[0] = self.emit(Op.WHERE, [ok, ptr, self.splat(scratch, shape)])
            new = Instr(instr.op, tuple(ops), instr.results, instr.attrs, (), instr.loc)
        else:
            assert mask_at is not None
            keep = ok if active is None else self.emit(Op.AND, [active, ok])
            if masked:
                ops[mask_at] = keep
            else:
                ops.insert(mask_at, keep)
            new = Instr(instr.op, tuple(ops), instr.results,
                        dataclasses.replace(instr.attrs, masked=True), (), instr.loc)
        kind = instr.op.value if instr.op is not Op.ATOMIC else f"atomic {instr.attrs.kind}"
        self.record_error(bad, Site(kind, instr.loc, names, size), offset)
        self.out.append(new)

    def device_assert(self, instr: Instr) -> None:
        self.loc = instr.loc
        bad = self.emit(Op.NOT, [instr.operands[0]])
        text = instr.attrs.text if isinstance(instr.attrs, A.Message) else ""
        self.record_error(bad, Site("device_assert", instr.loc, (), 0, text), None)

    # -- walking -------------------------------------------------------------
    def block(self, block: Block) -> None:
        saved, self.out = self.out, []
        for instr in block.instrs:
            for region in instr.regions:
                self.block(region)
            if instr.op in (Op.LOAD, Op.STORE, Op.ATOMIC, Op.ATOMIC_CAS):
                self.access(instr)
            elif instr.op is Op.DEVICE_ASSERT:
                self.device_assert(instr)
            else:
                self.out.append(instr)
        block.instrs, self.out = self.out, saved


def instrument(kernel: Kernel) -> tuple[Kernel, CheckPlan]:
    """``kernel`` with bounds checks and error recording (changed in place), and its plan."""
    desugar_descriptors(kernel)  # descriptor accesses are checked as the masked accesses they mean
    origins = PointerOrigins(kernel)
    inst = _Instrumenter(kernel, origins)
    inst.block(kernel.body)
    kernel.body.instrs[:0] = inst.prologue_instrs
    kernel.params = [*kernel.params, *inst.hidden]
    return kernel, inst.plan
