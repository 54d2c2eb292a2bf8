"""Hopper (sm_90a) warpgroup tensor-core instructions for the CUDA emitter, as LLVM inline PTX:
``wgmma`` with shared-memory descriptors, its fence/commit/wait, and the async-proxy fence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core import dtypes as D
from ....core.dtypes import DType
from ...llvm.builder import LLVMBuilder, Reg

_CONSTRAINT = {"float": "f", "double": "d", "i64": "l", "half": "h", "bfloat": "h", "i16": "h"}
_KIND = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "int8": "s8", "uint8": "u8",
         "float8e4nv": "e4m3", "float8e5": "e5m2"}


class PTXWarpgroupOps(LLVMBuilder):
    _warp_index: Reg | None = None

    def wgmma_ok(self) -> bool:
        return self.t.arch == "sm_90a"

    def warp_index(self) -> Reg:
        # lane 0's tid.x / 32 by shfl.sync.idx, which ptxas knows is warp-uniform (descriptors
        # built from it then stay in uniform registers, as Triton's); emitted once, first thing
        # in the entry block so that it dominates every use; masked to the warp count so that
        # LLVM knows it is small and non-negative
        if self._warp_index is None:
            n = self.counter = self.counter + 4
            tid, warp, lane0, out = (f"%warp{n - i}" for i in range(4))
            lines = [f"{tid} = call i32 @{self.t.thread_id}()", f"{warp} = lshr i32 {tid}, 5",
                     f"{lane0} = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 {warp}, i32 0, i32 31)"]
            self._declare(self.t.thread_id, "i32", [])
            self._declare("llvm.nvvm.shfl.sync.idx.i32", "i32", ["i32"] * 4)
            warps = self.threads // 32
            if warps & (warps - 1) == 0:
                lines.append(f"{out} = and i32 {lane0}, {warps - 1}")
            else:
                out = lane0
            self.blocks[self.order[0]][0:0] = ["  " + line for line in lines]
            self._warp_index = Reg(out, "i32")
        return self._warp_index

    def shared_address(self, byte_offset: int) -> Reg:
        p = self._local_ptr(byte_offset, Reg("0", "i32"), D.int8)
        return self._val("i32", f"ptrtoint {p} to i32")

    def _asm(self, text: str) -> None:
        self._emit(f'call void asm sideeffect "{text}", "~{{memory}}"()')

    def fence_async_shared(self) -> None:
        self._asm("fence.proxy.async.shared::cta;")

    def wgmma_fence(self) -> None:
        self._asm("wgmma.fence.sync.aligned;")

    def wgmma_commit(self) -> None:
        self._asm("wgmma.commit_group.sync.aligned;")

    def _tied(self, text: str, regs: Sequence[Any], ins: Sequence[tuple[str, Any]]) -> list[Reg]:
        """Inline asm whose outputs $0..$(n-1) are ``regs`` updated in place; ``ins`` follow."""
        n = len(regs)
        ty = regs[0].ty
        code = "=" + _CONSTRAINT.get(ty, "r")
        st = "{" + ", ".join([ty] * n) + "}"
        cons = ",".join([code] * n + [c for c, _ in ins] + [str(i) for i in range(n)] + ["~{memory}"])
        args = ", ".join([str(v) for _, v in ins] + [str(r) for r in regs])
        res = self._val(st, f'call {st} asm sideeffect "{text}", "{cons}"({args})')
        return [self._val(ty, f"extractvalue {res}, {i}") for i in range(n)]

    def wgmma(self, n: int, k: int, a: Any, b_desc: Any, acc: Sequence[Any], in_dtype: DType,
              trans_a: bool, trans_b: bool) -> list[Reg]:
        kind = _KIND[in_dtype.name]
        out = "s32" if in_dtype.is_int else "f32"
        regs = list(acc)
        d = "{" + ", ".join(f"${i}" for i in range(len(regs))) + "}"
        at = len(regs)
        ins: list[tuple[str, Any]] = []
        a_in_regs = isinstance(a, (list, tuple))
        if a_in_regs:
            a_text = "{" + ", ".join(f"${at + i}" for i in range(len(a))) + "}"
            ins += [("r", r) for r in a]
        else:
            a_text = f"${at}"
            ins.append(("l", a))
        b_at = at + len(ins)
        ins += [("l", b_desc), ("r", Reg("1", "i32"))]
        tail = "p"
        if kind in ("f16", "bf16"):
            tail += ", 1, 1" + ("" if a_in_regs else f", {int(trans_a)}") + f", {int(trans_b)}"
        elif kind in ("tf32", "e4m3", "e5m2"):
            tail += ", 1, 1"
        text = (f"{{ .reg .pred p; setp.ne.b32 p, ${b_at + 1}, 0; "
                f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{out}.{kind}.{kind} {d}, {a_text}, ${b_at}, {tail}; }}")
        return self._tied(text, regs, ins)

    def wgmma_wait(self, pending: int, regs: Sequence[Any]) -> list[Any]:
        text = f"wgmma.wait_group.sync.aligned {pending};"
        if not regs:
            self._asm(text)
            return []
        out = list(regs)
        for ty in dict.fromkeys(r.ty for r in regs):  # one asm per register type, all after the wait
            at = [i for i, r in enumerate(regs) if r.ty == ty]
            for i, r in zip(at, self._tied(text, [regs[i] for i in at], [])):
                out[i] = r
        return out
