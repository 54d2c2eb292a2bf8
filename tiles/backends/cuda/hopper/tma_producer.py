"""A producer warpgroup for the TMA-pipelined ``tl.dot`` loops (``tma_pipeline.py``): warp
specialization as FlashAttention-3 and Triton's ``warp_specialize`` do it; one of its warps copies.

Without it, thread 0 of the warps that run the MMAs also issues every copy, behind a barrier
of all threads each iteration, which re-aligns the warpgroups every time.  With it the program
has one more warp: at the kernel's start that warp runs only what the copies need -- the
top-level scalar instructions the loops' bounds and tile offsets come from, then for each
pipelined loop a loop that waits until the consumers have released a stage (its "empty"
mbarrier, one arrival per consumer warp), announces the stage's bytes on its "full" mbarrier
and issues the copies from its first lane -- and leaves the kernel.  The consumers' barriers
become named barrier 1 over their threads only; each pipelined loop starts with named barrier
2 over all threads, once thread 0 has initialized the loop's mbarriers and every consumer is
done with the arena.  A round-0 wait on an empty mbarrier asks for the parity of the phase
before its first one, which counts as complete, so the producer runs ``num_stages`` copies
ahead from the start.

The producer is a whole warpgroup, since registers move between warpgroups: launched with
384 threads, ptxas gives each 168 registers; the producer's warpgroup gives back all but 40
(``setmaxnreg.dec``, then three of its warps leave) and the two consumer warpgroups take 232
(``setmaxnreg.inc``).  That balance holds only if the kernel is launched with exactly 168
registers per thread (a kernel that needs fewer gets fewer, and the consumers' request would
wait forever), so the CUDA backend keeps this lowering only where ptxas says so
(``cuda/choices.py``) and lowers the kernel again with ``Options.codegen.producer`` off otherwise.

With persistent programs (``persistent.py``) the producer joins once, then loops over the
programs: per program the scalar instructions, the top-level loads it copies, then the loops,
the stage ring's slot and parity carried on.

It applies to kernels of 8 warps whose pipelined loops are all at the kernel's top level and
take what the producer needs from kernel parameters and pure scalar instructions at that
level; otherwise thread 0 issues the copies as before.  ``TILES_PRODUCER=0`` turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.ir import Instr, Value, walk_block
from ....core.ops import ELEMENTWISE, Op
from ...lowering.emitter import Handle
from ...lowering.mma.base import TensorCoreLowering
from .tma_claim import TMAEmitter
from .tma_pipeline import MBARRIER_BYTES, WARP, TMAPipe, find_tma_pipe, issue_copies, next_stage, stage_barriers

_PURE = ELEMENTWISE | {Op.CONST, Op.PROGRAM_ID, Op.NUM_PROGRAMS}
WARPGROUP = 128
CONSUMERS = 256   # two consumer warpgroups (num_warps=8) ...
LAUNCH_REGISTERS = 168  # ... and the producer's: ptxas's registers per thread for 384 threads
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = (LAUNCH_REGISTERS * (CONSUMERS + WARPGROUP) - PRODUCER_REGISTERS * WARPGROUP) // CONSUMERS


VARIANT = "producer"  # its name in ``Lowered.variants``


@dataclass
class Producer:
    """The pipelined loops the producer warp feeds and the scalar instructions it runs first."""

    loops: dict[Instr, TMAPipe]
    prefix: list[Instr]
    threads: int = field(default=WARPGROUP)

    def split_off(self, lw: TensorCoreLowering) -> None:
        split_off_producer(lw, self)


def find_producer(lw: TensorCoreLowering) -> Producer | None:
    e = lw.e
    if not lw.options.codegen.producer or not isinstance(e, TMAEmitter) or not e.producer_ok() \
            or not lw.tc.plan.wgmma or lw.threads != CONSUMERS or lw.options.maxnreg is not None:
        return None
    top = lw.kernel.body
    loops: dict[Instr, TMAPipe] = {}
    for instr in top.instrs:
        pipe = find_tma_pipe(lw, instr) if instr.op is Op.FOR and lw.tc.plan.loops.get(instr) else None
        if pipe is not None:
            loops[instr] = pipe
    if not loops:
        return None
    for instr in top.instrs:
        for region in instr.regions:
            if any(i.op is Op.FOR and lw.tc.plan.loops.get(i) and find_tma_pipe(lw, i) is not None
                   for i in walk_block(region)):
                return None  # a pipelined loop inside a branch or another loop
    todo: list[Value] = []
    for loop, pipe in loops.items():
        inside = {r for i in pipe.slice for r in i.results} | {loop.regions[0].args[0]}
        todo += loop.operands[:3]
        todo += [o for i in pipe.slice for o in i.operands if o not in inside]
        todo += [o for f in pipe.feeds for o in descriptor_operands(f.load).offsets if o not in inside]
    prefix = top_level_slice(lw, todo, set())
    if prefix is None:
        return None
    lw.variants.add(VARIANT)
    return Producer(loops, prefix)


def top_level_slice(lw: TensorCoreLowering, values: list[Value], have: set[Instr]) -> list[Instr] | None:
    """The top-level instructions ``values`` come from, with ``have`` and in the kernel's order,
    or None where one is not a pure scalar instruction (or not at the top level)."""
    top = lw.kernel.body
    defined = {r: i for i in top.instrs for r in i.results}
    params = {p.value for p in lw.kernel.params}
    needed = set(have)
    todo = list(values)
    while todo:
        v = todo.pop()
        if v in params:
            continue
        p = defined.get(v)
        if p is None:
            return None
        if p in needed:
            continue
        if p.regions or p.op not in _PURE or any(r.type.shape for r in p.results):
            return None
        needed.add(p)
        todo.extend(p.operands)
    return [i for i in top.instrs if i in needed]


def split_off_producer(lw: TensorCoreLowering, producer: Producer) -> None:
    """Emit the producer warp's program (it returns at its end); every barrier after this is
    the consumers' only."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    consumers = lw.const(lw.threads, D.int32)

    ring = lw.tc.persistent  # (persistent.py)

    def produce() -> None:
        e.set_max_registers(PRODUCER_REGISTERS, grow=False)
        e.return_where(lw.e.binary(Op.GE, lw.tid, lw.const(lw.threads + WARP, D.int32), D.int32), lambda: None)
        lane0 = lw.e.binary(Op.EQ, lw.tid, consumers, D.int32)

        def program() -> None:
            for instr in producer.prefix:
                for v, hs in zip(instr.results, lw.lower_instr(instr)):
                    lw.env[v] = hs
            if ring is not None:
                ring.produce_singles(lw, lane0)
            for loop, pipe in producer.loops.items():
                _produce(lw, loop, pipe, lane0)
        if ring is None:
            program()
            return
        e.join_barrier(lw.threads + WARP)  # the consumers' thread 0 has initialized the mbarriers
        ring.each_program(lw, program)
    e.return_where(lw.e.binary(Op.GE, lw.tid, consumers, D.int32), lw.in_scope(produce))
    e.set_max_registers(CONSUMER_REGISTERS, grow=True)
    e.consumer_barriers(lw.threads)


def _produce(lw: TensorCoreLowering, loop: Instr, pipe: TMAPipe, lane0: Handle) -> None:
    e = lw.e
    assert isinstance(e, TMAEmitter)
    lb, ub, step = (lw.env[v][0] for v in loop.operands[:3])
    iv_arg = loop.regions[0].args[0]
    iv_dtype = loop.operands[0].type.element
    full, empty = stage_barriers(pipe)
    ring = lw.tc.persistent
    if ring is None:
        e.join_barrier(lw.threads + WARP)  # the consumers' thread 0 has initialized the mbarriers

    def i32(x: int) -> Handle:
        return lw.const(x, D.int32)

    def run(iv: Handle, regs: list[Handle]) -> list[Handle]:
        slot, parity = regs
        at = lw.e.binary(Op.MUL, slot, i32(MBARRIER_BYTES), D.int32)
        e.mbarrier_wait(empty, lw.e.binary(Op.XOR, parity, i32(1), D.int32), at)  # the consumers released it
        issue_copies(lw, pipe, iv_arg, iv, iv_dtype, slot, full, lane0)
        return list(next_stage(lw, slot, parity, pipe.stages))
    start = (i32(0), i32(0)) if ring is None else ring.state
    outs = lw.e.for_range(lb, ub, step, iv_dtype, [(start[0], D.int32), (start[1], D.int32)], lw.in_scope(run))
    if ring is not None:
        ring.state = (outs[0], outs[1])

