"""Persistent programs: a kernel with a producer warpgroup (``tma_producer.py``) launched with at
most one program per SM, each running the kernel's programs ``i, i + n, i + 2n, ...`` (``n``
programs launched), so that the producer copies the next program's first tiles while the
consumers finish the one before -- the shape of cuDNN's and FlashAttention-3's attention kernels.

The launch passes the kernel's grid as three hidden int32 parameters (``GRID_PARAMS``, after the
tensor maps' address) and launches ``min(programs, SMs)`` programs along x (``cuda/tma_launch.py``);
``tl.program_id`` and ``tl.num_programs`` read the kernel's own (``Lowering.program_ids``).  Every
pipelined loop's stages form one ring at the top of shared memory whose mbarriers thread 0
initializes once; the ring's slot and parity run on from loop to loop and program to program,
in the producer and in the consumers alike.  Descriptor loads at the kernel's top level whose
offsets the producer can compute (attention's Q block) are copied by the producer too, into a
buffer of their own after the ring, as soon as the consumers have read the previous program's:
the consumers find the next program's block there when they get to it.  The rest of the arena is
the consumers' as before; where it would reach the ring the backend lowers the kernel again
without this (``NoRoomError``).

Taken only where no program may wait for another (no atomics), the program writes no memory
before what the producer copies (it would copy ahead of those stores), and the pipelined loops'
bounds do not depend on the program's id: programs of different lengths (causal attention's)
are balanced better by the hardware's order than by a fixed round robin.  ``TILES_PERSISTENT=0``
turns it off.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.ir import Instr, Param, TileType, Value, walk_block
from ....core.ops import Op
from ...lowering.emitter import Handle
from ...lowering.mma.base import TensorCoreLowering
from ...lowering.mma.extension import ChoiceNotApplicableError
from .tma import chunk_width, map_handle, tma_coords
from .tma_claim import TMAEmitter
from .tma_pipeline import MBARRIER_BYTES, WARP, init_stage_barriers
from .tma_producer import top_level_slice

GRID_PARAMS = ("tiles_grid_x", "tiles_grid_y", "tiles_grid_z")
VARIANT = "persistent"  # its name in ``Lowered.variants``
_ALIGN = 1024  # a 128-byte swizzle repeats every 1024 bytes: stages start on a whole period


class NoRoomError(ChoiceNotApplicableError):
    """The consumers' other uses of shared memory reach the ring: lower without this."""

    choice = "persistent"


class TopLoadsUnusedError(ChoiceNotApplicableError):
    """``tma_claim`` took top-level descriptor loads for a producer that does not copy them all:
    prepare the kernel again without (they are quicker as pointer loads than as TMA copies
    every consumer waits for)."""

    choice = "tma_top_loads"


def check_top_loads(lw: TensorCoreLowering) -> None:
    if not any(i.op is Op.DOT for i in lw.kernel.walk()):
        return
    ring = lw.tc.persistent
    if any(i.op is Op.DESC_LOAD and (ring is None or i not in ring.singles) for i in lw.kernel.body.instrs):
        raise TopLoadsUnusedError("the producer does not copy every top-level load taken")


@dataclass(frozen=True)
class Single:
    """A top-level descriptor load the producer copies: its buffer, "full" and "empty" mbarriers."""

    at: int
    nbytes: int

    @property
    def full(self) -> int:
        return self.at + self.nbytes

    @property
    def empty(self) -> int:
        return self.full + MBARRIER_BYTES


@dataclass
class Persistent:
    """The stage ring every pipelined loop shares, the producer's single loads and the hidden
    grid parameters."""

    base: int
    end: int
    dims: list[Value]
    singles: dict[Instr, Single]
    state: tuple[Handle, Handle] = (None, None)  # the ring's next slot and its parity, while walking
    phase: Handle = None  # the parity of the program's number in this launched program, while walking

    def lower_programs(self, lw: TensorCoreLowering) -> None:
        lower_programs(lw)  # (methods, so that base.py and tma.py need not import this module)

    def load_single(self, lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
        return load_single(lw, instr)

    def each_program(self, lw: TensorCoreLowering, body: Callable[[], None]) -> None:
        each_program(lw, body)

    def produce_singles(self, lw: TensorCoreLowering, go: Handle) -> None:
        produce_singles(lw, go)


def find_persistent(lw: TensorCoreLowering) -> Persistent | None:
    producer = lw.tc.producer
    if producer is None or not lw.options.codegen.persistent:
        return None
    kernel = lw.kernel
    if any(i.op in (Op.ATOMIC, Op.ATOMIC_CAS) for i in kernel.walk()):
        return None  # a program may wait for another one that this launch runs later
    pipes = list(producer.loops.values())
    if len({p.stages for p in pipes}) != 1 or any(_from_program_id(lw, v) for loop in producer.loops
                                                  for v in loop.operands[:2]):
        return None
    stages = pipes[0].stages
    stride = _aligned(max(p.stage_bytes for p in pipes))
    size = stages * (stride + 2 * MBARRIER_BYTES)
    if _written_before(kernel.body.instrs, set(producer.loops)):
        return None  # the producer would copy ahead of the program's own stores
    singles: dict[Instr, Single] = {}
    for instr in kernel.body.instrs:
        if instr.op is Op.DESC_LOAD and not _written_before(kernel.body.instrs, {instr}):
            # (every DESC_LOAD left in the prepared kernel is TMA's)
            prefix = top_level_slice(lw, list(descriptor_operands(instr).offsets), set(producer.prefix))
            if prefix is not None:
                producer.prefix = prefix
                nbytes = math.prod(instr.attrs.block_shape) * instr.results[0].type.element.itemsize
                singles[instr] = Single(_aligned(size), nbytes)
                size = _aligned(size) + nbytes + 2 * MBARRIER_BYTES
    base = (lw.e.target.shared_memory - size) // _ALIGN * _ALIGN
    if base <= 0:
        return None
    singles = {i: Single(base + s.at, s.nbytes) for i, s in singles.items()}
    for loop in producer.loops:
        producer.loops[loop] = dataclasses.replace(producer.loops[loop], base=base, stride=stride)
    dims = [Value(TileType(D.int32, ()), name) for name in GRID_PARAMS]
    kernel.params.extend(Param(name, v) for name, v in zip(GRID_PARAMS, dims))
    lw.variants.add(VARIANT)
    return Persistent(base, base + size, dims, singles)


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


_WRITES = (Op.STORE, Op.DESC_STORE, Op.ATOMIC, Op.ATOMIC_CAS)


def _written_before(top: list[Instr], reads: set[Instr]) -> bool:
    """Whether the program may write memory before one of the top-level instructions ``reads``."""
    for instr in top:
        if instr in reads:
            return False
        if instr.op in _WRITES or any(i.op in _WRITES for r in instr.regions for i in walk_block(r)):
            return True
    return False


def _from_program_id(lw: TensorCoreLowering, v: Value) -> bool:
    todo, seen = [v], set()
    while todo:
        x = todo.pop()
        instr = lw.tc.defs.get(x)
        if instr is None or id(instr) in seen:
            continue
        if instr.op is Op.PROGRAM_ID:
            return True
        seen.add(id(instr))
        todo.extend(instr.operands)
    return False


def each_program(lw: TensorCoreLowering, body: Callable[[], None]) -> None:
    """``body`` once for each of the kernel's programs this launched program runs, with their ids
    and the ring's state carried from one to the next."""
    ring = lw.tc.persistent
    e = lw.e
    counts = [lw.env[d][0] for d in ring.dims]
    i32 = D.int32
    total = e.binary(Op.MUL, e.binary(Op.MUL, counts[0], counts[1], i32), counts[2], i32)
    zero, one = lw.const(0, i32), lw.const(1, i32)
    ring.state = (zero, zero)

    def run(vid: Handle, regs: list[Handle]) -> list[Handle]:
        rest = e.binary(Op.IDIV, vid, counts[0], i32)
        lw.program_ids = [e.binary(Op.MOD, vid, counts[0], i32), e.binary(Op.MOD, rest, counts[1], i32),
                          e.binary(Op.IDIV, rest, counts[1], i32)]
        lw.program_counts = counts
        ring.state, ring.phase = (regs[0], regs[1]), regs[2]
        body()
        return [*ring.state, e.binary(Op.XOR, ring.phase, one, i32)]
    e.for_range(e.program_id(0), total, e.num_programs(0), i32, [(zero, i32), (zero, i32), (zero, i32)],
                lw.in_scope(run))
    lw.program_ids = lw.program_counts = None


def lower_programs(lw: TensorCoreLowering) -> None:
    """The consumers' part: the ring's mbarriers initialized, the producer let go, then the
    kernel's body once per program; the arena below the ring checked."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    ring = lw.tc.persistent
    pipe = next(iter(lw.tc.producer.loops.values()))
    first = e.binary(Op.EQ, lw.tid, lw.const(0, D.int32), D.int32)

    def init() -> None:
        init_stage_barriers(lw, pipe, True)
        for single in ring.singles.values():
            e.mbarrier_init(single.full, 1)
            e.mbarrier_init(single.empty, lw.threads)  # every consumer thread, once it has read its part
    e.fence_proxy_async()
    e.when(first, init)
    e.join_barrier(lw.threads + WARP)  # the producer starts copying after this

    def program() -> None:
        lw.lower_block(lw.kernel.body)
    each_program(lw, program)
    if lw.local_bytes > ring.base:
        raise NoRoomError(f"{lw.local_bytes} bytes of shared memory below a ring at {ring.base}")
    lw.local_bytes = ring.end


def produce_singles(lw: TensorCoreLowering, go: Handle) -> None:
    """The producer's part for one program: each single load copied once the consumers have read
    the previous program's."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    ring = lw.tc.persistent
    for instr, single in ring.singles.items():
        e.mbarrier_wait(single.empty, e.binary(Op.XOR, ring.phase, lw.const(1, D.int32), D.int32))
        tensor_map, coords = map_handle(lw, instr), tma_coords(lw, instr)

        def copy(single: Single = single, tensor_map: Handle = tensor_map, coords: list[Handle] = coords) -> None:
            e.mbarrier_expect_tx(single.full, single.nbytes)
            e.tma_load(single.at, tensor_map, coords, single.full)
        e.when(go, copy)


def load_single(lw: TensorCoreLowering, instr: Instr) -> list[list[Handle]]:
    """The consumers' part: wait for the block, read each thread's slots, release the buffer."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    ring = lw.tc.persistent
    single = ring.singles[instr]
    e.mbarrier_wait(single.full, ring.phase)
    dtype = instr.results[0].type.element
    lay = lw.layout(instr.results[0])
    w = chunk_width(lay.vec, dtype.itemsize)
    values = [h for j in range(0, lay.per_thread, w)
              for h in e.local_load_vector(single.at, lw.idx(lw.flat_index(lay, j)), w, dtype)]
    e.mbarrier_arrive(single.empty)
    return [values]
