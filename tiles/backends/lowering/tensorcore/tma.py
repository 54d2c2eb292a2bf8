"""Tensor-descriptor accesses copied whole by the tensor memory accelerator (TMA, sm_90+).

``claim`` runs in ``prepare`` on the kernel copy, before descriptor accesses are spelled out
as masked pointer accesses (``core/descriptors.py``).  It keeps the DESC_LOADs and DESC_STOREs
TMA can serve as they are, and appends one hidden pointer parameter, ``tiles_tma_maps``: the
array of 128-byte tensor maps the host encodes at launch (``cuda/tensor_map.py``), one per
distinct ``MapSpec`` (``maps_of``).  An access qualifies when its base is a pointer parameter
promised 16-byte aligned, each size and stride is a constant or an integer parameter (the host
reads it), the innermost stride is the constant 1, the block fits a TMA box (<= 256 per axis,
innermost row a multiple of 16 bytes) and it is not inside a loop that runs ``tl.dot`` (whose
loads the ``cp.async`` pipeline stages; see pipeline.py).  DESC_LOADs qualify only in kernels
without ``tl.dot`` (their results then never live in MMA fragments).

Lowering, single-stage: a load is one ``cp.async.bulk.tensor`` issued by thread 0 into the
local-memory arena (row-major box, no swizzle), completing on an mbarrier every thread waits
on; each thread then reads its slots.  TMA zero-fills the box outside the tensor, which is
DESC_LOAD's meaning.  A store: owners write the tile row-major into the arena, every thread
fences its writes for the async proxy, and after a barrier thread 0 issues the bulk store
(TMA drops elements outside the tensor) and waits for it.  Both end with a barrier, like every
other user of the arena.

Off unless ``TILES_TMA=1`` (``config.tma``) until measured on a GPU.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator

from .... import config
from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.dtypes import PointerType
from ....core.ir import Instr, Kernel, Param, TileType, Value
from ....core.ops import DESCRIPTOR, Op
from ..emitter import Emitter, Handle
from .base import TensorCoreLowering, tc_rule
from .tma_spec import MapSpec, Source, box_fits

HIDDEN_PARAM = "tiles_tma_maps"
MAX_BOX_BYTES = 64 * 1024
_MBARRIER_BYTES = 8


class TMAEmitter:
    """The instructions TMA needs from an emitter (``cuda/tma_ops.py`` writes them as PTX)."""

    def tma_ok(self) -> bool:
        return False

    def tensor_map(self, maps: Handle, index: int) -> Handle:
        raise NotImplementedError

    def mbarrier_init(self, byte_offset: int, count: int) -> None:
        raise NotImplementedError

    def mbarrier_inval(self, byte_offset: int) -> None:
        raise NotImplementedError

    def mbarrier_expect_tx(self, byte_offset: int, nbytes: int) -> None:
        raise NotImplementedError

    def mbarrier_wait(self, byte_offset: int, parity: Handle) -> None:
        raise NotImplementedError

    def tma_load(self, dst_offset: int, tensor_map: Handle, coords: list[Handle], mbar_offset: int) -> None:
        raise NotImplementedError

    def tma_store(self, tensor_map: Handle, coords: list[Handle], src_offset: int) -> None:
        raise NotImplementedError

    def fence_proxy_async(self) -> None:
        raise NotImplementedError


def _source(v: Value, params: dict[Value, int], defs: dict[Value, Instr]) -> Source | None:
    """Where the host finds the int64 scalar ``v``: a parameter (maybe through a cast from
    int32), a constant, else None."""
    d = defs.get(v)
    if d is not None and d.op is Op.CAST and d.operands[0] in params and d.operands[0].type.element.is_int:
        return Source(params[d.operands[0]])
    if d is not None and d.op is Op.CONST and isinstance(d.attrs.value, int):
        return Source(None, int(d.attrs.value))
    return Source(params[v]) if v in params else None


def spec_of(instr: Instr, kernel: Kernel, defs: dict[Value, Instr]) -> MapSpec | None:
    """The tensor map a descriptor access needs, or None when TMA cannot serve it."""
    ops = descriptor_operands(instr)
    index = {p.value: i for i, p in enumerate(kernel.params)}
    base = ops.base
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
    if any(s is None for s in (*shape, *strides)):
        return None
    if strides[-1] != Source(None, 1):
        return None
    for s in strides[:-1]:  # a constant stride TMA can never describe: leave it to pointers
        assert s is not None
        if s.param is None and (s.value <= 0 or s.value * elem.itemsize % 16):
            return None
    return MapSpec(index[base], elem.name, elem.itemsize, tuple(shape), tuple(strides), box)  # type: ignore[arg-type]


_DATA_TYPE_NAMES = frozenset({"uint8", "int8", "float8e4nv", "float8e5", "uint16", "int16", "uint32", "int32",
                              "uint64", "int64", "float16", "float32", "float64", "bfloat16"})


def _candidates(kernel: Kernel) -> list[Instr]:
    """Descriptor accesses outside every loop that runs a DOT; loads only without any DOT."""
    any_dot = any(i.op is Op.DOT for i in kernel.walk())
    out: list[Instr] = []

    def visit(instrs: list[Instr], in_dot_loop: bool) -> None:
        for instr in instrs:
            if instr.op in DESCRIPTOR and not in_dot_loop and not (instr.op is Op.DESC_LOAD and any_dot):
                out.append(instr)
            for region in instr.regions:
                runs_dot = instr.op in (Op.FOR, Op.WHILE) and any(
                    i.op is Op.DOT for i in _walk(region.instrs))
                visit(region.instrs, in_dot_loop or runs_dot)

    visit(kernel.body.instrs, False)
    return out


def _walk(instrs: list[Instr]):  # type: ignore[no-untyped-def]
    for instr in instrs:
        yield instr
        for region in instr.regions:
            yield from _walk(region.instrs)


def maps_of(kernel: Kernel) -> list[MapSpec]:
    """The distinct tensor maps of the descriptor accesses left in a prepared kernel, in order."""
    defs = {r: i for i in kernel.walk() for r in i.results}
    specs: list[MapSpec] = []
    for instr in kernel.walk():
        if instr.op in DESCRIPTOR:
            spec = spec_of(instr, kernel, defs)
            assert spec is not None, "a descriptor access TMA cannot serve was kept"
            if spec not in specs:
                specs.append(spec)
    return specs


_switched_off = threading.local()


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Compile without TMA in this thread (the CUDA launcher's variant for launches whose
    tensors TMA cannot describe)."""
    before = getattr(_switched_off, "on", False)
    _switched_off.on = True
    try:
        yield
    finally:
        _switched_off.on = before


def claim(kernel: Kernel, emitter: Emitter) -> Callable[[Instr], bool]:
    """The descriptor accesses of ``kernel`` (a prepare copy) TMA takes; with any, the hidden
    maps parameter is appended to ``kernel.params``."""
    wanted = config.tma() and not getattr(_switched_off, "on", False)
    if not wanted or not isinstance(emitter, TMAEmitter) or not emitter.tma_ok():
        return lambda instr: False
    defs = {r: i for i in kernel.walk() for r in i.results}
    taken = {id(i) for i in _candidates(kernel) if spec_of(i, kernel, defs) is not None}
    if taken:
        kernel.params.append(Param(HIDDEN_PARAM, Value(TileType(PointerType(D.int8), ()), HIDDEN_PARAM), 16))
    return lambda instr: id(instr) in taken


def _map_handle(lw: TensorCoreLowering, instr: Instr) -> Handle:
    specs = lw.__dict__.get("_tma_maps")
    if specs is None:
        specs = lw.__dict__["_tma_maps"] = maps_of(lw.kernel)
    spec = spec_of(instr, lw.kernel, lw.tc.defs)
    assert spec is not None
    maps = next(p.value for p in lw.kernel.params if p.name == HIDDEN_PARAM)
    e = lw.e
    assert isinstance(e, TMAEmitter)
    return e.tensor_map(lw.env[maps][0], specs.index(spec))


def _coords(lw: TensorCoreLowering, instr: Instr) -> list[Handle]:
    """The block's offsets, innermost first (TMA's order)."""
    return [lw.env[v][0] for v in reversed(descriptor_operands(instr).offsets)]


def _first_thread(lw: TensorCoreLowering) -> Handle:
    e = lw.e
    return e.binary(Op.EQ, e.thread_id(), lw.const(0, D.int32), D.int32)


@tc_rule(Op.DESC_LOAD)
def _desc_load(lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
    e = lw.e
    assert isinstance(e, TMAEmitter)
    dtype = instr.results[0].type.element
    nbytes = math.prod(instr.attrs.block_shape) * dtype.itemsize
    mbar = -(-nbytes // _MBARRIER_BYTES) * _MBARRIER_BYTES
    lw.reserve_local(mbar + _MBARRIER_BYTES)
    tensor_map, coords, first = _map_handle(lw, instr), _coords(lw, instr), _first_thread(lw)
    lw.e.when(first, lambda: e.mbarrier_init(mbar, 1))
    lw.e.barrier()

    def issue() -> None:
        e.fence_proxy_async()
        e.mbarrier_expect_tx(mbar, nbytes)
        e.tma_load(0, tensor_map, coords, mbar)
    lw.e.when(first, issue)
    e.mbarrier_wait(mbar, lw.const(0, D.int32))
    lay = lw.layout(instr.results[0])
    values = [lw.e.local_load(0, lw.idx(lw.flat_index(lay, j)), dtype) for j in range(lay.per_thread)]
    lw.e.barrier()
    lw.e.when(first, lambda: e.mbarrier_inval(mbar))
    lw.e.barrier()
    return [values]


@tc_rule(Op.DESC_STORE)
def _desc_store(lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
    e = lw.e
    assert isinstance(e, TMAEmitter)
    value = descriptor_operands(instr).value
    assert value is not None
    dtype = value.type.element
    lw.reserve_local(math.prod(instr.attrs.block_shape) * dtype.itemsize)
    lay = lw.layout(value)
    for j, h in enumerate(lw.env[value]):
        lw.e.local_store(0, lw.idx(lw.flat_index(lay, j)), h, dtype, lw.owner(lay, j))
    e.fence_proxy_async()
    lw.e.barrier()
    tensor_map, coords = _map_handle(lw, instr), _coords(lw, instr)
    lw.e.when(_first_thread(lw), lambda: e.tma_store(tensor_map, coords, 0))
    lw.e.barrier()
    return []
