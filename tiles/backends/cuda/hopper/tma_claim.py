"""Which tensor-descriptor accesses TMA takes (run by ``prepare`` on its kernel copy).

``claim`` keeps the DESC_LOADs and DESC_STOREs TMA can serve as they are (the rest become
masked pointer accesses, ``core/descriptors.py``) and appends one hidden pointer parameter,
``tiles_tma_maps``.  An access qualifies when its base is a pointer parameter promised 16-byte
aligned, each size and stride is a constant or an integer parameter (the host reads it at
launch), the innermost stride is the constant 1, the innermost offset is provably a multiple of
16 bytes (axis facts; TMA faults on others) and the block fits a TMA box (<= 256 per axis,
innermost row a multiple of 16 bytes).  Where it sits matters too:

- not directly in the body of a loop that runs ``tl.dot`` (an outer persistent loop is fine):
  stores always, loads only in kernels without ``tl.dot`` (a loaded tile then never lives in
  MMA fragments); single-stage copies (``tma.py``);
- the 16-bit 2-D loads that are the operands of the DOTs of a ``FOR`` body (A, and B or the
  ``x`` of B = ``x.T``), each used by its DOT alone, when no operand is a pointer load (an A
  from registers, as attention's, is fine): staged by ``tma_pipeline.py``.  When that loop
  cannot be pipelined after all, the single-stage rule still serves them.

``Options.codegen.tma`` allows it (``TILES_TMA=1``/``0``; unset, ``config.TMA_BY_DEFAULT``: on).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.dtypes import PointerType
from ....core.ir import Block, Instr, Kernel, Param, TileType, Value
from ....core.ops import DESCRIPTOR, Op
from ...base import Options
from ...lowering.axisinfo import AxisInfo, analyze
from ...lowering.emitter import Emitter, Handle
from ...lowering.mma.emitter import TensorCoreEmitter
from ...lowering.mma.plan import wgmma_fits
from .tma_rebase import rewrite_dot_loops
from .tma_spec import MapSpec, Source, box_fits

HIDDEN_PARAM = "tiles_tma_maps"
UNBOUNDED_ROWS = 2**31 - 1  # a map's extent on an axis the access does not bound
MAX_BOX_BYTES = 64 * 1024
_DATA_TYPE_NAMES = frozenset({"uint8", "int8", "float8e4nv", "float8e5", "uint16", "int16", "uint32", "int32",
                              "uint64", "int64", "float16", "float32", "float64", "bfloat16"})


class TMAEmitter:
    """The instructions TMA needs from an emitter (``tma_ops.py`` writes them as PTX)."""

    def tma_ok(self) -> bool:
        return False

    def tensor_map(self, maps: Handle, index: int) -> Handle:
        raise NotImplementedError

    def mbarrier_init(self, byte_offset: int, count: int) -> None:
        raise NotImplementedError

    def mbarrier_inval(self, byte_offset: int) -> None:
        raise NotImplementedError

    def mbarrier_expect_tx(self, byte_offset: int, nbytes: int, index: Handle | None = None) -> None:
        raise NotImplementedError

    def mbarrier_wait(self, byte_offset: int, parity: Handle, index: Handle | None = None) -> None:
        raise NotImplementedError

    def mbarrier_wait_or_give_up(self, byte_offset: int, parity: Handle, failed: Handle,
                                 index: Handle | None = None) -> Handle:
        raise NotImplementedError

    def trap(self) -> None:
        raise NotImplementedError

    def tma_load(self, dst_offset: int, tensor_map: Handle, coords: list[Handle], mbar_offset: int,
                 dst_index: Handle | None = None, mbar_index: Handle | None = None) -> None:
        raise NotImplementedError

    def tma_store(self, tensor_map: Handle, coords: list[Handle], src_offset: int, visible: bool = True) -> None:
        raise NotImplementedError

    def fence_proxy_async(self) -> None:
        raise NotImplementedError

    # -- a producer warp (tma_producer.py) ------------------------------------------------
    def producer_ok(self) -> bool:
        """Whether one more warp may issue the copies while the others only consume them."""
        return False

    def mbarrier_arrive(self, byte_offset: int, index: Handle | None = None) -> None:
        raise NotImplementedError

    def consumer_barriers(self, threads: int) -> None:
        """From here on ``barrier`` synchronizes the first ``threads`` threads only."""
        raise NotImplementedError

    def join_barrier(self, threads: int) -> None:
        """A barrier of all ``threads`` threads, producer warp included."""
        raise NotImplementedError

    def set_max_registers(self, count: int, grow: bool) -> None:
        """This warpgroup's registers per thread become ``count`` (more when ``grow``, else fewer)."""
        raise NotImplementedError

    def return_where(self, cond: Handle, body: Callable[[], None]) -> None:
        """Threads where ``cond`` holds run ``body`` and leave the kernel; the others go on."""
        raise NotImplementedError


_ARITH = {Op.ADD: "add", Op.SUB: "sub", Op.MUL: "mul"}


def _source(v: Value, params: dict[Value, int], defs: dict[Value, Instr], depth: int = 8) -> Source | None:
    """How the host computes the integer scalar ``v`` from the launch's values: a parameter, a
    constant, an integer cast of one, or adds, subtracts and multiplies of them; else None."""
    if v in params:
        return Source(params[v])
    d = defs.get(v)
    if d is None or depth == 0 or not v.type.element.is_int or v.type.shape:  # type: ignore[union-attr]
        return None
    if d.op is Op.CONST and isinstance(d.attrs.value, int):
        return Source(None, int(d.attrs.value))
    src = d.operands[0].type.element if d.operands else None
    if d.op is Op.CAST and src is not None and src.is_int and src.is_signed and src.bits <= v.type.element.bits:
        return _source(d.operands[0], params, defs, depth - 1)  # sign extension keeps the value
    if d.op in _ARITH and v.type.element.is_signed:  # type: ignore[union-attr]
        args = [_source(o, params, defs, depth - 1) for o in d.operands]
        if None in args:
            return None
        return Source(op=_ARITH[d.op], args=tuple(args), bits=v.type.element.bits)  # type: ignore[arg-type, union-attr]
    return None


def spec_of(instr: Instr, kernel: Kernel, defs: dict[Value, Instr]) -> MapSpec | None:
    """The tensor map a descriptor access needs, or None when TMA cannot serve it."""
    ops = descriptor_operands(instr)
    index = {p.value: i for i, p in enumerate(kernel.params)}
    base = ops.base
    rebased = instr.attrs.rebased
    if rebased:  # param + (a remainder the host checks is 0): tma_rebase.py
        base = defs[base].operands[0]
    if base not in index or kernel.params[index[base]].divisibility % 16:
        return None
    elem = base.type.dtype.element  # type: ignore[union-attr]
    if isinstance(elem, PointerType) or elem.is_bool or elem.name not in _DATA_TYPE_NAMES:
        return None
    box = instr.attrs.block_shape
    if len(box) > 5 or not box_fits(box, elem.itemsize) or math.prod(box) * elem.itemsize > MAX_BOX_BYTES:
        return None
    ints = {v: i for v, i in index.items() if not isinstance(v.type.dtype, PointerType)}
    shape = [_source(v, ints, defs) for v in ops.shape]
    strides = [_source(v, ints, defs) for v in ops.strides]
    if rebased:  # axis 0 is not bounded: TMA's bound must not cut the rows that follow
        shape[0] = Source(None, UNBOUNDED_ROWS)
    if any(s is None for s in (*shape, *strides)):
        return None
    if strides[-1] != Source(None, 1):
        return None
    inner = shape[-1]
    assert inner is not None
    if inner.param is None and not inner.op and inner.value * elem.itemsize % 16:
        return None  # rows that end inside a 16-byte chunk: a TMA store writes past them (tensor_map.py)
    for s in strides[:-1]:  # a constant stride TMA can never describe: leave it to pointers
        assert s is not None
        if s.param is None and (s.value <= 0 or s.value * elem.itemsize % 16):
            return None
    return MapSpec(index[base], elem.name, elem.itemsize, tuple(shape), tuple(strides), box,  # type: ignore[arg-type]
                   multiples=rebased)


def _candidates(kernel: Kernel) -> list[Instr]:
    """Descriptor accesses not directly in the body of a loop that runs a DOT (they would keep
    that loop from being pipelined); loads only in kernels without a DOT."""
    any_dot = any(i.op is Op.DOT for i in kernel.walk())
    out: list[Instr] = []

    def visit(instrs: list[Instr], in_dot_loop: bool) -> None:
        for instr in instrs:
            if instr.op in DESCRIPTOR and not in_dot_loop and not (instr.op is Op.DESC_LOAD and any_dot):
                out.append(instr)
            for region in instr.regions:
                runs_dot = instr.op in (Op.FOR, Op.WHILE) and any(i.op is Op.DOT for i in region.instrs)
                visit(region.instrs, runs_dot or in_dot_loop and instr.op is Op.IF)

    visit(kernel.body.instrs, False)
    return out


def _use_counts(kernel: Kernel) -> dict[Value, int]:
    uses: dict[Value, int] = {}
    for instr in kernel.walk():
        for v in instr.operands:
            uses[v] = uses.get(v, 0) + 1
        for region in instr.regions:
            for y in region.yields:
                uses[y] = uses.get(y, 0) + 1
    return uses


def _feed_load(v: Value, producers: dict[Value, Instr], uses: dict[Value, int]) -> Instr | None:
    """The DESC_LOAD TMA can stage for a DOT operand ``v``: 2-D, 16-bit, rows a multiple of 32
    bytes, used by its DOT alone."""
    p = producers.get(v)
    if p is None or p.op is not Op.DESC_LOAD or uses.get(v) != 1 or len(v.type.shape) != 2 \
            or v.type.element.name not in ("float16", "bfloat16") or v.type.shape[-1] * 2 % 32:
        return None
    return p


def dot_feeds(body: Block, uses: dict[Value, int]) -> list[Instr] | None:
    """The DESC_LOADs TMA stages for the DOTs directly in ``body``: every B (possibly through a
    transpose) and every A read from memory; an A computed otherwise (attention's P, or a tile
    from before the loop) is left to registers.  None when some operand is a load TMA cannot
    stage (a pointer load, or a descriptor load it cannot copy)."""
    producers = {r: i for i in body.instrs for r in i.results}
    feeds: list[Instr] = []
    for dot in (i for i in body.instrs if i.op is Op.DOT):
        a, b = dot.operands[:2]
        p = producers.get(b)
        if p is not None and p.op is Op.PERMUTE and p.attrs.order == (1, 0) and uses.get(b) == 1:
            b = p.operands[0]
        b_load = _feed_load(b, producers, uses)
        if b_load is None:
            return None
        feeds.append(b_load)
        a_producer = producers.get(a)
        if a_producer is not None and a_producer.op in (Op.LOAD, Op.DESC_LOAD):
            a_load = _feed_load(a, producers, uses)
            if a_load is None:
                return None
            feeds.append(a_load)
    return feeds


def _dot_loop_feeds(kernel: Kernel) -> list[Instr]:
    """DOT operand loads of FOR bodies whose DOTs all read such loads only."""
    uses = _use_counts(kernel)
    out: list[Instr] = []
    for instr in kernel.walk():
        if instr.op is Op.FOR:
            feeds = dot_feeds(instr.regions[0], uses)
            if feeds:
                out += feeds
    return out


def _innermost_offset_aligned(instr: Instr, info: dict[Value, AxisInfo]) -> bool:
    """Whether the access's innermost offset is provably a multiple of 16 bytes: TMA faults on
    others (seen on the H200 as an illegal instruction), so those stay masked pointer accesses."""
    ops = descriptor_operands(instr)
    itemsize = ops.base.type.dtype.element.itemsize  # type: ignore[union-attr]
    return info.get(ops.offsets[-1], AxisInfo()).div * itemsize % 16 == 0


def claim(kernel: Kernel, emitter: Emitter, threads: int, options: Options) -> Callable[[Instr], bool]:
    """The descriptor accesses of ``kernel`` (a prepare copy, ``threads`` per program) TMA takes
    (none unless ``options.codegen.tma``); with any, the hidden maps parameter is appended to
    ``kernel.params``.  With ``codegen.tma_top_loads`` (and a producer and persistent programs
    allowed) the top-level loads of kernels with DOTs too, for a producer to copy (persistent.py:
    where it does not, the lowering is retried with that choice off)."""
    choices = options.codegen
    if not choices.tma or not isinstance(emitter, TMAEmitter) or not emitter.tma_ok():
        return lambda instr: False
    dots = [i for i in kernel.walk() if i.op is Op.DOT]
    wgmma = isinstance(emitter, TensorCoreEmitter) and all(wgmma_fits(emitter, d, threads // 32) for d in dots)
    keep_only: Callable[[set[int]], None] = lambda taken: None  # noqa: E731
    # a producer warpgroup may copy the top-level loads too (persistent.py; else prepared again without)
    top_loads = wgmma and bool(dots) and threads == 256 and choices.tma_top_loads and choices.producer \
        and choices.persistent
    if wgmma:
        ints = {p.value: i for i, p in enumerate(kernel.params) if not isinstance(p.value.type.dtype, PointerType)}
        keep_only = rewrite_dot_loops(kernel, lambda v, defs: _source(v, ints, defs), top_loads)
    defs = {r: i for i in kernel.walk() for r in i.results}
    candidates = _candidates(kernel)
    if wgmma:
        candidates += _dot_loop_feeds(kernel)  # the plan will run every DOT as wgmma
    if top_loads:
        candidates += [i for i in kernel.body.instrs if i.op is Op.DESC_LOAD]
    info = analyze(kernel)
    taken = {id(i) for i in candidates
             if spec_of(i, kernel, defs) is not None and _innermost_offset_aligned(i, info)}
    keep_only(taken)
    if taken:
        kernel.params.append(Param(HIDDEN_PARAM, Value(TileType(PointerType(D.int8), ()), HIDDEN_PARAM), 16))
    return lambda instr: id(instr) in taken


