"""Tensor-descriptor accesses copied whole by the tensor memory accelerator (TMA, sm_90+).

Which accesses TMA takes is decided in ``prepare`` (``tma_claim.py``); the kernel then has one
hidden pointer parameter, ``tiles_tma_maps``: the array of 128-byte tensor maps the host
encodes at launch (``cuda/tensor_map.py``), one per distinct ``MapSpec`` the walk records
(``map_handle``, ``recorded_maps``).

Here, the single-stage rules.  A load is one ``cp.async.bulk.tensor`` issued by thread 0 into
the local-memory arena (row-major box, no swizzle), completing on an mbarrier every thread
waits on; each thread then reads its slots.  TMA zero-fills the box outside the tensor, which
is DESC_LOAD's meaning.  A store: owners write the tile row-major into the arena, every thread
fences its writes for the async proxy, and after a barrier thread 0 issues the bulk store (TMA
drops elements outside the tensor) and waits for it: for its writes where the program may read
memory later (``_read_later``), else only until it has read the arena.  Both end with a barrier, like every
other user of the arena.  Loads that feed ``tl.dot`` in a loop are staged by
``tma_pipeline.py`` instead (these rules then return nothing for them).
"""

from __future__ import annotations

import dataclasses
import math

from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.ir import Block, Instr, walk_block
from ....core.ops import Op
from ...lowering.emitter import Handle
from ...lowering.lower import Lowering
from ...lowering.mma.base import TensorCoreLowering
from .tma_claim import HIDDEN_PARAM, TMAEmitter, spec_of
from .tma_spec import MapSpec

_MBARRIER_BYTES = 8


def recorded_maps(lw: Lowering) -> list[MapSpec]:
    """The tensor maps the walk's TMA copies use, in the order of their index in the array."""
    maps: list[MapSpec] = lw.__dict__.setdefault("_tma_maps", [])
    return maps


def map_handle(lw: TensorCoreLowering, instr: Instr, box: tuple[int, ...] | None = None,
               swizzle: int = 0) -> Handle:
    """The address of the tensor map for ``instr``'s descriptor with this box (default: the block)
    and swizzle, recorded for the host (``recorded_maps``) on first use."""
    spec = spec_of(instr, lw.kernel, lw.tc.defs)
    assert spec is not None, "a descriptor access TMA cannot serve was kept"
    spec = dataclasses.replace(spec, box=spec.box if box is None else box, swizzle=swizzle)
    maps = recorded_maps(lw)
    if spec not in maps:
        maps.append(spec)
    param = next(p.value for p in lw.kernel.params if p.name == HIDDEN_PARAM)
    e = lw.e
    assert isinstance(e, TMAEmitter)
    return e.tensor_map(lw.env[param][0], maps.index(spec))


def tma_coords(lw: TensorCoreLowering, instr: Instr) -> list[Handle]:
    """The block's offsets, innermost first (TMA's order)."""
    return [lw.env[v][0] for v in reversed(descriptor_operands(instr).offsets)]


def chunk_width(vec: int, itemsize: int) -> int:
    """Elements per local-memory access: the layout's chunk, at most 16 bytes."""
    w = vec
    while w > 1 and w * itemsize > 16:
        w //= 2
    return w


def _first_thread(lw: TensorCoreLowering) -> Handle:
    e = lw.e
    return e.binary(Op.EQ, e.thread_id(), lw.const(0, D.int32), D.int32)


def desc_load(lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
    if instr in lw.tc.async_loads:
        return [None]  # type: ignore[list-item]  # copied into a pipeline stage (tma_pipeline.py)
    if lw.tc.persistent is not None and instr in lw.tc.persistent.singles:
        return lw.tc.persistent.load_single(lw, instr)  # copied by the producer (persistent.py)
    e = lw.e
    assert isinstance(e, TMAEmitter)
    dtype = instr.results[0].type.element
    nbytes = math.prod(instr.attrs.block_shape) * dtype.itemsize
    mbar = -(-nbytes // _MBARRIER_BYTES) * _MBARRIER_BYTES
    lw.reserve_local(mbar + _MBARRIER_BYTES)
    tensor_map, coords, first = map_handle(lw, instr), tma_coords(lw, instr), _first_thread(lw)
    lw.e.when(first, lambda: e.mbarrier_init(mbar, 1))
    lw.e.barrier()

    def issue() -> None:
        e.fence_proxy_async()
        e.mbarrier_expect_tx(mbar, nbytes)
        e.tma_load(0, tensor_map, coords, mbar)
    lw.e.when(first, issue)
    e.mbarrier_wait(mbar, lw.const(0, D.int32))
    lay = lw.layout(instr.results[0])
    w = chunk_width(lay.vec, dtype.itemsize)
    values = [h for j in range(0, lay.per_thread, w)
              for h in lw.e.local_load_vector(0, lw.idx(lw.flat_index(lay, j)), w, dtype)]
    lw.e.barrier()
    lw.e.when(first, lambda: e.mbarrier_inval(mbar))
    lw.e.barrier()
    return [values]


def desc_store(lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
    e = lw.e
    assert isinstance(e, TMAEmitter)
    value = descriptor_operands(instr).value
    assert value is not None
    dtype = value.type.element
    lw.reserve_local(math.prod(instr.attrs.block_shape) * dtype.itemsize)
    lay = lw.layout(value)
    handles = lw.env[value]
    w = chunk_width(lay.vec, dtype.itemsize)
    for j in range(0, lay.per_thread, w):
        lw.e.local_store_vector(0, lw.idx(lw.flat_index(lay, j)), handles[j:j + w], dtype, lw.owner(lay, j))
    e.fence_proxy_async()
    lw.e.barrier()
    tensor_map, coords = map_handle(lw, instr), tma_coords(lw, instr)
    visible = _read_later(lw.kernel.body, instr)
    lw.e.when(_first_thread(lw), lambda: e.tma_store(tensor_map, coords, 0, visible))
    lw.e.barrier()
    return []


_READS = (Op.LOAD, Op.DESC_LOAD, Op.ATOMIC, Op.ATOMIC_CAS)


def _read_later(block: Block, store: Instr) -> bool:
    """Whether memory may be read (or an atomic ordered) after ``store`` in this program: an access
    later in its block or in a block around it, or anywhere in a loop around it."""
    for k, instr in enumerate(block.instrs):
        if instr is store:
            return any(i.op in _READS for later in block.instrs[k + 1:] for i in _walk(later))
        inside = [r for r in instr.regions if any(i is store for i in walk_block(r))]
        if inside:
            if instr.op in (Op.FOR, Op.WHILE) and any(i.op in _READS for i in _walk(instr)):
                return True
            return _read_later(inside[0], store) or any(
                i.op in _READS for later in block.instrs[k + 1:] for i in _walk(later))
    return True


def _walk(instr: Instr) -> list[Instr]:
    return [instr, *(i for r in instr.regions for i in walk_block(r))]
