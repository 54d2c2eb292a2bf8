"""Hopper (sm_90+) tensor memory accelerator instructions for the CUDA emitter, as inline PTX:
``cp.async.bulk.tensor`` loads (completing on an ``mbarrier``) and stores (bulk groups), the
mbarrier operations they need, and the proxy fence before a store reads shared memory.

Shared-memory operands are byte offsets into the kernel's arena (``tiles_smem``); a tensor
map is the generic address of a 128-byte ``CUtensorMap`` the host encoded (``tensor_map.py``).
Coordinates are int32 handles, innermost axis first (TMA's order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ....core import dtypes as D
from ...llvm.builder import LLVMBuilder, Reg
from ..mma_ops import sm_version
from .tma_claim import TMAEmitter

WAIT_TRIES = 1 << 26


class PTXTensorMemoryOps(LLVMBuilder, TMAEmitter):
    consumer_threads: int | None = None  # set: ``barrier`` leaves the producer warp out

    def tma_ok(self) -> bool:
        sm = sm_version(self.t.arch)
        return sm is not None and sm >= 90

    def producer_ok(self) -> bool:
        return self.tma_ok()

    def consumer_barriers(self, threads: int) -> None:
        self.consumer_threads = threads

    def barrier(self) -> None:
        """Every thread's (``bar.sync 0``), or after ``consumer_barriers`` the consumers' (named
        barrier 1 with their count)."""
        if self.consumer_threads is None:
            super().barrier()  # type: ignore[misc]
        else:
            self._named_barrier(1, self.consumer_threads)

    def join_barrier(self, threads: int) -> None:
        self._named_barrier(2, threads)

    def _named_barrier(self, ident: int, threads: int) -> None:
        name = self._declare("llvm.nvvm.barrier.cta.sync.aligned.count", "void", ["i32", "i32"])
        self._emit(f"call void @{name}(i32 {ident}, i32 {threads})")

    def return_where(self, cond: Any, body: Callable[[], None]) -> None:
        then, rest = self._new_block("producer"), self._new_block("consumer")
        self._branch(cond, then, rest)
        self.cur = then
        body()
        self._emit("ret void")
        self.cur = rest

    def set_max_registers(self, count: int, grow: bool) -> None:
        self._emit(f'call void asm sideeffect "setmaxnreg.{"inc" if grow else "dec"}.sync.aligned.u32 {count};", '
                   '"~{memory}"()')

    def mbarrier_arrive(self, byte_offset: int, index: Any = None) -> None:
        """One arrival on the barrier (no transaction bytes)."""
        self._emit('call void asm sideeffect "mbarrier.arrive.shared::cta.b64 _, [$0];", '
                   f'"r,~{{memory}}"({self._smem(byte_offset, index)})')

    def _smem(self, byte_offset: int, index: Any = None) -> Reg:
        """The shared address of byte ``byte_offset`` (+ the i32 handle ``index``) of the arena."""
        p = self._local_ptr(byte_offset, index if index is not None else Reg("0", "i32"), D.int8)
        return self._val("i32", f"ptrtoint {p} to i32")

    def tensor_map(self, maps: Any, index: int) -> Reg:
        """The generic address of map ``index`` of the array the hidden parameter ``maps`` points to."""
        at = self._val(maps.ty, f"getelementptr i8, {maps}, i64 {128 * index}")
        return self._val("i64", f"ptrtoint {at} to i64")

    def mbarrier_init(self, byte_offset: int, count: int) -> None:
        """Initialize the barrier for ``count`` arrivals, visible to the async proxy (TMA) too."""
        self._emit(f'call void asm sideeffect "mbarrier.init.shared::cta.b64 [$0], {count}; '
                   f'fence.mbarrier_init.release.cluster;", "r,~{{memory}}"({self._smem(byte_offset)})')

    def mbarrier_inval(self, byte_offset: int) -> None:
        self._emit('call void asm sideeffect "mbarrier.inval.shared::cta.b64 [$0];", '
                   f'"r,~{{memory}}"({self._smem(byte_offset)})')

    def mbarrier_expect_tx(self, byte_offset: int, nbytes: int, index: Any = None) -> None:
        """Arrive on the barrier, announcing ``nbytes`` of asynchronous copies that complete on it."""
        self._emit('call void asm sideeffect "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], '
                   f'{nbytes};", "r,~{{memory}}"({self._smem(byte_offset, index)})')

    def mbarrier_wait(self, byte_offset: int, parity: Any, index: Any = None) -> None:
        """Spin until the barrier's phase with parity ``parity`` (an i32 handle) has completed;
        after 2**26 unsuccessful tries (seconds at least) trap, so a copy that never lands is a
        launch error rather than a hung GPU."""
        text = ("{ .reg .pred done, more; .reg .u32 tries; mov.u32 tries, 0; "
                "wait_phase: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; @done bra wait_done; "
                f"add.u32 tries, tries, 1; setp.lt.u32 more, tries, {WAIT_TRIES}; @more bra wait_phase; trap; "
                "wait_done: }")
        self._emit(f'call void asm sideeffect "{text}", "r,r,~{{memory}}"({self._smem(byte_offset, index)}, '
                   f'{parity})')

    def mbarrier_wait_or_give_up(self, byte_offset: int, parity: Any, failed: Any, index: Any = None) -> Reg:
        """``mbarrier_wait`` that gives up instead of trapping: the i32 ``failed`` (nonzero: an
        earlier wait gave up, so try once) or-ed with whether this one gave up.  A loop whose
        wgmma group stays in flight waits this way and traps after it: a trap inside the loop
        makes ptxas wait for the group before every mbarrier wait (its warning C7517)."""
        text = ("{ .reg .pred done, more; .reg .u32 tries; setp.ne.u32 more, $3, 0; "
                f"selp.u32 tries, {WAIT_TRIES - 1}, 0, more; "
                "wait_phase: mbarrier.try_wait.parity.shared::cta.b64 done, [$1], $2; @done bra wait_done; "
                f"add.u32 tries, tries, 1; setp.lt.u32 more, tries, {WAIT_TRIES}; @more bra wait_phase; "
                "wait_done: selp.u32 $0, 0, 1, done; or.b32 $0, $0, $3; }")
        return self._val("i32", f'call i32 asm sideeffect "{text}", "=r,r,r,r,~{{memory}}"('
                                f'{self._smem(byte_offset, index)}, {parity}, {failed})')

    def trap(self) -> None:
        self._emit('call void asm sideeffect "trap;", "~{memory}"()')

    def tma_load(self, dst_offset: int, tensor_map: Any, coords: Sequence[Any], mbar_offset: int,
                 dst_index: Any = None, mbar_index: Any = None) -> None:
        """Copy the box at ``coords`` (innermost first) into shared memory at ``dst_offset``
        (+ ``dst_index``); out-of-bounds elements are zero-filled, and the bytes complete on the
        mbarrier at ``mbar_offset`` (+ ``mbar_index``)."""
        n = len(coords)
        places = ", ".join(f"${3 + i}" for i in range(n))
        text = (f"cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes "
                f"[$0], [$1, {{{places}}}], [$2];")
        cons = ",".join(["r", "l", "r"] + ["r"] * n + ["~{memory}"])
        args = ", ".join([str(self._smem(dst_offset, dst_index)), str(tensor_map),
                          str(self._smem(mbar_offset, mbar_index)), *map(str, coords)])
        self._emit(f'call void asm sideeffect "{text}", "{cons}"({args})')
    def tma_store(self, tensor_map: Any, coords: Sequence[Any], src_offset: int, visible: bool = True) -> None:
        """Copy shared memory at ``src_offset`` to the box at ``coords``; out-of-bounds elements are
        not written.  One bulk group, waited for until its writes are done (``visible``: later
        accesses of this program see them) or only until it has read the shared memory, which may
        then be reused (the writes land on their own, by the kernel's end at the latest)."""
        n = len(coords)
        places = ", ".join(f"${2 + i}" for i in range(n))
        text = (f"cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [$0, {{{places}}}], [$1]; "
                f"cp.async.bulk.commit_group; cp.async.bulk.wait_group{'' if visible else '.read'} 0;")
        cons = ",".join(["l", "r"] + ["r"] * n + ["~{memory}"])
        args = ", ".join([str(tensor_map), str(self._smem(src_offset)), *map(str, coords)])
        self._emit(f'call void asm sideeffect "{text}", "{cons}"({args})')

    def fence_proxy_async(self) -> None:
        """Order the generic-proxy memory accesses before this point (this thread's, and those a
        barrier made visible to it) before later TMA (async-proxy) accesses."""
        self._emit('call void asm sideeffect "fence.proxy.async;", "~{memory}"()')
