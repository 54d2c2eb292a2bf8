"""The numpy SIMT simulator (``simt.py``) with TMA: tensor maps, bulk tensor copies and
mbarriers, so the TMA lowering (single-stage and pipelined) is checked numerically without a GPU.

A tensor map is the ``MapSpec`` the lowering recorded (taken from ``map_handle``'s frame when it
asks for the map's address) with the launch's values.  A load copies its box at once, zero-filled
outside the tensor, into shared memory at the hardware's swizzled addresses (16-byte chunk bits
4-6 XORed with address bits 7-9 for 128-byte rows; fewer bits for 64 and 32), and counts its bytes
on the mbarrier.  The mbarriers follow PTX: ``expect_tx`` is one arrival plus expected bytes, a
phase completes when arrivals and bytes reach zero, and a wait for parity P must find the current
phase's parity different from P (a wait that would spin forever fails here).  The copy lands when
issued, and ``wgmma`` reads its operands when its group completes, so a stage refilled while a
group still reads it gives wrong sums.

A producer warpgroup (``hopper/tma_producer.py``) runs here before the consumers, since the lowering
emits it first: its joins and stage fills are queued in order, each fill with the "empty" phase
it waited for, and a fill lands as soon as the producer could have issued it: the consumers have
reached that loop's join and completed that empty phase (each consumer arrival, init, join and
wait lets the queue go on).  So a stage released before the MMAs reading it have completed is
overwritten under them, and a wait for a phase no one completes leaves the queue stuck.
Persistent programs (``hopper/persistent.py``) run the same way: ``run(..., programs=n)`` launches ``n``
programs with the kernel's grid as the hidden values, and each one's producer queues the fills
of all the programs it runs (Q's buffer included) before its consumers start.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...base import CodegenChoices, Options
from ...lowering.entry import lower_with_tensor_cores
from ..choices import applicable
from ..hopper import persistent
from ..hopper.extension import HOPPER
from ..hopper.tma_claim import TMAEmitter
from ..hopper.tma_spec import MapSpec
from .simt import WARP, GlobalMemory, H, SimEmitter


@dataclass
class Copy:
    """A producer's copy, recorded when issued: destination byte, map, coordinates."""

    dst: int
    spec: MapSpec
    coords: list[int]


@dataclass
class Issue:
    """A producer's stage fill: its full barrier, the empty phase it waited for, bytes, copies."""

    full: int
    released: tuple[int, int] | None  # (empty barrier, parity whose phase must have completed)
    nbytes: int
    copies: list[Copy] = field(default_factory=list)


@dataclass
class Barrier:
    count: int
    pending: int
    tx: int = 0
    phase: int = 0
    events: list[str] = field(default_factory=list)


class TMASimEmitter(SimEmitter, TMAEmitter):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.maps: dict[int, MapSpec] = {}
        self.barriers: dict[int, Barrier] = {}
        self.loads = self.stores = 0
        self.producing = False  # inside the producer warpgroup's program
        self.released: tuple[int, int] | None = None  # the producer's last wait on an empty barrier
        self.queue: list[Issue | int] = []  # the producer's fills and joins (their number), in order
        self.joins = [0, 0]  # joins reached by the producer, by the consumers
        self.arrivals = 0

    def producer_ok(self) -> bool:
        return True

    def return_where(self, cond: H, body: Any) -> None:
        taken = cond.v.astype(bool)
        self.active.append(taken)
        outer, self.producing = self.producing, self.producing or bool(taken[self._mask(None)].all())
        try:
            body()
        finally:
            self.active.pop()
            self.producing = outer
        self.active.insert(0, ~taken)  # those threads have left the kernel
        self.present &= ~taken

    def set_max_registers(self, count: int, grow: bool) -> None:
        assert count % 8 == 0 and 24 <= count <= 256

    def consumer_barriers(self, threads: int) -> None:
        pass

    def join_barrier(self, threads: int) -> None:
        if self.producing:
            self.queue.append(self.joins[0])
            self.joins[0] += 1
        else:
            self.joins[1] += 1
            self._advance()

    def mbarrier_arrive(self, byte_offset: int, index: H | None = None) -> None:
        m = self._mask(None)
        ats = {self._at(byte_offset, index, int(t)) for t in np.nonzero(m)[0]}
        assert len(ats) <= 1, "threads arrive on different barriers"
        if not ats:
            return
        bar = self.barriers[ats.pop()]
        n = int(m.sum())
        assert bar.pending >= n, f"more arrivals than the barrier counts: {bar} (+{n})"
        bar.pending -= n
        self.arrivals += n
        self._complete(bar)
        self._advance()

    def _advance(self) -> None:
        """Land the producer's fills, in order, as far as its joins and empty waits let it go."""
        while self.queue:
            head = self.queue[0]
            if isinstance(head, int):
                if self.joins[1] <= head:
                    return
            else:
                if head.released is not None:
                    empty, parity = head.released
                    if empty not in self.barriers or self.barriers[empty].phase % 2 == parity:
                        return
                bar = self.barriers[head.full]
                assert bar.pending > 0, f"a fill of a stage whose last one no one waited for: {bar}"
                bar.pending -= 1
                bar.tx += head.nbytes
                for c in head.copies:
                    self._copy(c.dst, c.spec, c.coords, head.full)
            self.queue.pop(0)

    def tma_ok(self) -> bool:
        return True

    def _one(self, what: str) -> int | None:
        """The one thread issuing ``what`` (None: no thread does, e.g. past a loop's end)."""
        active = np.nonzero(self._mask(None))[0]
        assert len(active) <= 1, f"{what} must be issued by one thread, got {list(active)}"
        return int(active[0]) if len(active) else None

    def tensor_map(self, maps: H, index: int) -> H:
        caller = inspect.currentframe().f_back  # type: ignore[union-attr]
        self.maps[index] = caller.f_locals["spec"]  # type: ignore[union-attr]
        return self._h(np.int64(index))

    def _at(self, byte_offset: int, index: H | None, t: int) -> int:
        return byte_offset + (0 if index is None else int(index.v[t]))

    def mbarrier_init(self, byte_offset: int, count: int) -> None:
        if self._one("mbarrier.init") is None:
            return
        assert byte_offset % 8 == 0
        self.barriers[byte_offset] = Barrier(count, count)

    def mbarrier_inval(self, byte_offset: int) -> None:
        if self._one("mbarrier.inval") is None:
            return
        bar = self.barriers.pop(byte_offset)
        assert not any(isinstance(f, Issue) and f.full == byte_offset for f in self.queue), \
            "invalidated with the producer's copies not landed"
        assert bar.tx == 0 and bar.pending == bar.count, f"invalidated with copies in flight: {bar}"

    def _complete(self, bar: Barrier) -> None:
        if bar.pending == 0 and bar.tx == 0:
            bar.phase += 1
            bar.pending = bar.count

    def mbarrier_expect_tx(self, byte_offset: int, nbytes: int, index: H | None = None) -> None:
        t = self._one("mbarrier.arrive.expect_tx")
        if t is None:
            return
        if self.producing:
            self.queue.append(Issue(self._at(byte_offset, index, t), self.released, nbytes))
            return
        bar = self.barriers[self._at(byte_offset, index, t)]
        assert bar.pending > 0
        bar.pending -= 1
        bar.tx += nbytes

    def mbarrier_wait(self, byte_offset: int, parity: H, index: H | None = None) -> None:
        active = np.nonzero(self._mask(None))[0]
        at = {self._at(byte_offset, index, int(t)) for t in active}
        assert len(at) == 1, "threads wait on different barriers"
        if self.producing:  # checked when the fill it guards lands
            self.released = (at.pop(), {int(parity.v[t]) for t in active}.pop())
            return
        self._advance()
        bar = self.barriers[at.pop()]
        p = {int(x) for x in parity.v}
        assert len(p) == 1 and bar.phase % 2 != p.pop(), f"this wait would never return: {bar}"

    def mbarrier_wait_or_give_up(self, byte_offset: int, parity: H, failed: H, index: H | None = None) -> H:
        assert not failed.v.any(), "an earlier wait gave up"
        self.mbarrier_wait(byte_offset, parity, index)  # (no clock here: a phase that never completes fails)
        return failed

    def trap(self) -> None:
        assert not self._mask(None).any(), "trap"

    def _box(self, spec: MapSpec, coords: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Byte addresses in global memory of the box's elements (row-major, outermost first)
        and whether each lies inside the tensor."""
        values = self.args
        dims = [s.of(values) for s in spec.shape]
        strides = [s.of(values) for s in spec.strides]
        start = list(reversed(coords))  # coordinates come innermost first
        idx = np.indices(spec.box).reshape(len(spec.box), -1) + np.array(start)[:, None]
        inside = np.all((idx >= 0) & (idx < np.array(dims)[:, None]), axis=0)
        addr = int(values[spec.base]) + (idx * np.array(strides)[:, None]).sum(axis=0) * spec.itemsize
        return addr, inside

    def _smem_addresses(self, spec: MapSpec, dst: int) -> np.ndarray:
        n = int(np.prod(spec.box))
        logical = dst + np.arange(n) * spec.itemsize
        if spec.swizzle:
            assert dst % (8 * spec.swizzle) == 0, f"swizzled box at {dst}: not a whole swizzle period"
            logical = logical ^ (((logical >> 7) & (spec.swizzle // 16 - 1)) << 4)
        return logical

    def tma_load(self, dst_offset: int, tensor_map: H, coords: list[H], mbar_offset: int,
                 dst_index: H | None = None, mbar_index: H | None = None) -> None:
        t = self._one("cp.async.bulk.tensor")
        if t is None:
            return
        spec = self.maps[int(tensor_map.v[t])]
        dst = self._at(dst_offset, dst_index, t)
        assert dst % 128 == 0, f"TMA destination {dst} not 128-byte aligned"
        at = self._at(mbar_offset, mbar_index, t)
        if self.producing:
            fill = self.queue[-1]
            assert isinstance(fill, Issue) and fill.full == at, "a copy without its expect_tx"
            fill.copies.append(Copy(dst, spec, [int(c.v[t]) for c in coords]))
            return
        self._copy(dst, spec, [int(c.v[t]) for c in coords], at)

    def _copy(self, dst: int, spec: MapSpec, coords: list[int], at: int) -> None:
        src, inside = self._box(spec, coords)
        s = spec.itemsize
        byte = np.arange(s)
        d = self._smem_addresses(spec, dst)[:, None] + byte
        self.smem[d] = np.where(inside[:, None], self.mem[np.where(inside, src, 0)[:, None] + byte], 0)
        bar = self.barriers[at]
        bar.tx -= s * len(src)
        assert bar.tx >= 0, "more bytes arrived than expected"
        self._complete(bar)
        self.loads += 1

    def tma_store(self, tensor_map: H, coords: list[H], src_offset: int, visible: bool = True) -> None:
        t = self._one("cp.async.bulk.tensor store")
        if t is None:
            return
        spec = self.maps[int(tensor_map.v[t])]
        dst, inside = self._box(spec, [int(c.v[t]) for c in coords])
        byte = np.arange(spec.itemsize)
        d = self._smem_addresses(spec, src_offset)[inside][:, None] + byte
        self.mem[dst[inside][:, None] + byte] = self.smem[d]
        self.stores += 1

    def fence_proxy_async(self) -> None:
        pass


def run(kernel: Any, args: Sequence[Any], grid: tuple[int, ...], threads: int, num_stages: int = 1,
        programs: int | None = None) -> list[TMASimEmitter]:
    """``simt.run`` with TMA: the hidden maps parameter gets a dummy value; the emitters
    (one per program) come back for their counts.  With ``programs``, the kernel must take
    persistent programs (``persistent.py``, with an H100's shared memory) and that many are
    launched, given ``grid`` as the launch does; without it, it is lowered without them."""
    memory = GlobalMemory(args)
    mem, values = memory.mem, list(memory.values)
    values.append(np.int64(0))  # tiles_tma_maps: the simulator keeps the maps itself
    g = (tuple(grid) + (1, 1, 1))[:3]
    launched = g if programs is None else (programs, 1, 1)
    if programs is not None:
        values += [np.int32(n) for n in g]
    sims = []
    for z in range(launched[2]):
        for y in range(launched[1]):
            for x in range(launched[0]):
                sim = TMASimEmitter(values, (x, y, z), launched, mem)
                options = Options(num_warps=threads // WARP, num_stages=num_stages, codegen=CodegenChoices.from_env())
                if programs is None:
                    options = options.without("persistent")
                else:
                    sim.target = dataclasses.replace(sim.target, shared_memory=227 * 1024)
                # (a choice not applicable is found before anything is emitted, or fails the assertion)
                def once(o: Options, sim: TMASimEmitter = sim) -> Any:
                    return lower_with_tensor_cores(kernel, sim, o, HOPPER)
                lowered = applicable(once, options)
                if programs is not None:
                    assert persistent.VARIANT in lowered.variants, "the kernel did not take persistent programs"
                assert not any(b.tx for b in sim.barriers.values()), "copies left in flight"
                assert not sim.queue, f"the producer's fills never landed: {sim.queue[:2]}"
                sims.append(sim)
    memory.write_back()
    return sims
