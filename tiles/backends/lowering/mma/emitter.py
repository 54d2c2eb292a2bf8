"""What the tensor-core lowering asks of an emitter, beyond the shared ``Emitter`` contract.

A backend whose target has tensor cores gives ``lower_with_tensor_cores`` an emitter of this
class (CUDA: ``backends/cuda/emitter.py``); every other backend's emitter stays a plain
``Emitter`` and its ``tl.dot`` takes the serial rule.  ``mma_shape`` may still answer None
for some operand types (the DOT then takes the serial rule too).
"""

from __future__ import annotations

from collections.abc import Sequence

from ....core.dtypes import DType, int32, int64, uint16, uint32
from ....core.ops import Op
from ..emitter import Emitter, Handle


class TensorCoreEmitter(Emitter):
    # ------------------------------------------------------------ warp tensor cores
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> tuple[int, int, int] | None:
        """(m, n, k) of the warp-wide tensor-core multiply-add for these operand/accumulator
        types, or None when the target has none (tl.dot then takes the serial path).
        Fragments follow PTX ``mma.sync.aligned.m16n8k*`` (row-major A, column-major B)."""
        return None

    def mma(self, shape: tuple[int, int, int], a: Sequence[Handle], b: Sequence[Handle],
            c: Sequence[Handle], in_dtype: DType) -> list[Handle]:
        """d = a @ b + c on one warp: ``a``/``b`` are 32-bit fragment registers (from
        ``ldmatrix``), ``c`` the 4 accumulator elements of this lane (fp32 or int32)."""
        raise NotImplementedError

    def pack_pair(self, lo: Handle, hi: Handle, dtype: DType) -> Handle:
        """A uint32 holding two 16-bit ``dtype`` values, ``lo`` in the low half (an MMA
        operand register)."""
        def half(h: Handle) -> Handle:
            return self.cast(self.bitcast(h, dtype, uint16), uint16, uint32)
        return self.binary(Op.OR, half(lo), self.binary(Op.SHL, half(hi), self.constant(16, uint32), uint32),
                           uint32)

    def ldmatrix(self, byte_offset: int, byte_index: Handle, count: int, trans: bool) -> list[Handle]:
        """Warp-wide load of ``count`` 8x8 matrices of 16-bit elements from local memory at
        ``byte_offset + byte_index`` (lane l gives the address of row l % 8 of matrix l // 8);
        returns ``count`` 32-bit registers (``trans``: each matrix transposed)."""
        raise NotImplementedError

    def stmatrix_ok(self) -> bool:
        """Whether the target has ``stmatrix`` below (PTX ``stmatrix``, sm_90)."""
        return False

    def stmatrix(self, byte_offset: int, byte_index: Handle, regs: Sequence[Handle], trans: bool = False) -> None:
        """Warp-wide store of ``len(regs)`` (1, 2 or 4) 8x8 matrices of 16-bit elements to local
        memory: lane l gives the address (``byte_offset + byte_index``, 16-byte aligned) of row
        l % 8 of matrix l // 8 as stored (lanes from ``8 * len(regs)`` on give none); register i of
        lane l holds columns 2 * (l % 4) (low half) and 2 * (l % 4) + 1 of row l // 4 of matrix i
        (``pack_pair``); ``trans``: each matrix is stored transposed (its columns as the rows).  All
        32 lanes of the warp execute it."""
        raise NotImplementedError

    def cp_async(self, byte_offset: int, byte_index: Handle, p: Handle, nbytes: int,
                 mask: Handle | None) -> bool:
        """Start an asynchronous copy of ``nbytes`` (4, 8 or 16, aligned) from global ``p`` to
        local memory at ``byte_offset + byte_index``; where ``mask`` is false, write zeros and
        read nothing.  False: the target has no asynchronous copies (nothing was emitted)."""
        return False

    def running_add(self, a: Handle, b: Handle) -> Handle:
        """``a + b`` (int64) kept as an addition by the optimizer: a loop-carried address offset
        that must not be folded back into a product of the trip count (``running.py``)."""
        return self.binary(Op.ADD, a, b, int64)

    def cp_async_commit(self) -> None:
        """Close the group of asynchronous copies this thread started since the last commit."""
        raise NotImplementedError

    def cp_async_wait(self, pending: int) -> None:
        """Wait until at most ``pending`` of this thread's committed groups are still in flight
        (a barrier afterwards makes the data visible to the other threads)."""
        raise NotImplementedError

    # ------------------------------------------------------------ warpgroup tensor cores (optional)
    def wgmma_ok(self) -> bool:
        """Whether the target has warpgroup MMAs (PTX ``wgmma``, sm_90a) and the calls below."""
        return False

    def warp_index(self) -> Handle:
        """This thread's warp (thread id // warp size, int32) in a form the assembler knows is the
        same on every lane, so that what is computed from it (matrix descriptors) can stay in
        uniform registers."""
        return self.binary(Op.IDIV, self.thread_id(), self.constant(32, int32), int32)

    def shared_address(self, byte_offset: int) -> Handle:
        """The 32-bit shared-memory address of local memory at ``byte_offset`` (int32 handle)."""
        raise NotImplementedError

    def fence_async_shared(self) -> None:
        """Make this thread's earlier local-memory writes visible to asynchronous readers
        (``wgmma`` operands); a barrier afterwards covers the other threads' writes."""
        raise NotImplementedError

    def wgmma(self, n: int, k: int, a: Handle | Sequence[Handle], b_desc: Handle, acc: Sequence[Handle],
              in_dtype: DType, trans_a: bool, trans_b: bool) -> list[Handle]:
        """Start D = A @ B + acc on the warpgroup (4 warps), m64 x ``n`` x ``k``: ``a`` is a
        shared-memory descriptor (uint64) or 4 registers laid out as mma.sync's A fragment for
        this warp's 16 rows; ``b_desc`` a descriptor; ``acc`` this thread's n/2 accumulator
        elements (the mma.sync accumulator layout repeated over n/8).  The result may only be
        read after ``wgmma_wait`` hands it back."""
        raise NotImplementedError

    def wgmma_fence(self) -> None:
        """Order earlier register writes of accumulators before the next ``wgmma``."""
        raise NotImplementedError

    def wgmma_commit(self) -> None:
        """Close the group of ``wgmma`` started since the last commit."""
        raise NotImplementedError

    def wgmma_wait(self, pending: int, regs: Sequence[Handle]) -> list[Handle]:
        """Wait until at most ``pending`` committed groups are in flight; ``regs`` (results of
        finished ones) come back readable."""
        raise NotImplementedError
