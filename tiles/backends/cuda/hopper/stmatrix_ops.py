"""``stmatrix`` (sm_90) for the CUDA emitter: a warp stores 8x8 matrices of 16-bit elements from
mma-layout registers to shared memory, one 16-byte row per address (the LLVM NVVM intrinsic)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core import dtypes as D
from ...llvm.builder import LLVMBuilder
from ..mma_ops import sm_version


class PTXStoreMatrixOps(LLVMBuilder):
    def stmatrix_ok(self) -> bool:
        sm = sm_version(self.t.arch)
        return sm is not None and sm >= 90

    def stmatrix(self, byte_offset: int, byte_index: Any, regs: Sequence[Any], trans: bool = False) -> None:
        assert len(regs) in (1, 2, 4), len(regs)
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        name = f"llvm.nvvm.stmatrix.sync.aligned.m8n8.x{len(regs)}{'.trans' if trans else ''}.b16"
        self._declare(name, "void", [q.ty, *("i32" for _ in regs)])
        self._emit(f"call void @{name}({', '.join(str(a) for a in (q, *regs))})")
