"""The contract between the shared GPU lowering and an output language.

The lowering (``lower.py``) walks the tile IR and calls these methods; an emitter
turns each call into output code (OpenCL C text, llvmlite instructions...) and
returns an opaque *handle* for every per-thread scalar it creates.  Handles are
only ever passed back to the same emitter.  Every method works on one scalar of
one thread: the lowering has already unrolled tiles into per-thread elements.

Dtype conventions: integer handles of 1 bit (``int1``) are booleans; float16 and
bfloat16 may be held in any wider register type as long as every op returns a
value rounded to the declared dtype; a pointer handle points at elements of its
``PointerType.element``.  Conditions (masks, ``if`` conditions) are int1 handles.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

from ...core.dtypes import DType, PointerType, ScalarType, int32
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ...core.mathfns import MathFunction
from ...core.ops import Op
from ..base import Target
from .legalize import Legality

Handle = Any
Carried = Sequence[tuple[Handle, ScalarType]]


class Emitter(abc.ABC):
    """One kernel's worth of output code; create a fresh emitter per kernel."""

    target: Target
    name: str = ""  # the kernel's function name in the code, once ``begin_kernel`` has run
    # added to every local-memory byte offset: ops lowered inside a software-pipelined loop's body
    # address a region above its stage buffers (mma/pipeline.py)
    local_base: int = 0

    # ------------------------------------------------------------ kernel frame
    @abc.abstractmethod
    def begin_kernel(self, name: str, params: Sequence[tuple[str, ScalarType]],
                     threads: int) -> list[Handle]:
        """Open the kernel; return one handle per parameter.  ``threads`` per program."""

    @abc.abstractmethod
    def finish(self, local_bytes: int) -> str:
        """Close the kernel and return its code; it uses ``local_bytes`` of work-group local memory
        (``lower`` reports that size in ``Lowered.shared_bytes``: do not write it into the code)."""

    # ------------------------------------------------------------ values
    legality: Legality = Legality()  # the cases legalize.py may leave to this target
    # a program barrier between a global load and a later store through the same pointer parameter
    # that another thread of the program may read or write, also across a loop's back edge
    # (lowering/hazards.py, ``GlobalHazards``): a device that runs a work-group's threads one after
    # another between barriers (pocl) would otherwise let one thread's store overwrite what another
    # thread reads after it
    orders_global_hazards: bool = False

    @abc.abstractmethod
    def constant(self, value: bool | int | float, dtype: DType) -> Handle:
        """A constant of ``dtype`` (ints already wrapped to the type's range)."""

    @abc.abstractmethod
    def thread_id(self) -> Handle:
        """int32 id of this thread inside its program, in [0, threads)."""

    @abc.abstractmethod
    def program_id(self, axis: int) -> Handle:
        """int32 id of this program along grid ``axis``."""

    @abc.abstractmethod
    def num_programs(self, axis: int) -> Handle:
        """int32 number of programs along grid ``axis``."""

    @abc.abstractmethod
    def binary(self, op: Op, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        """``op`` (BINARY_ARITH or COMPARISON) on two operands of ``dtype``, with the
        semantics of ``core.ops.DOCS`` on the inputs legalize.py leaves: divisors are never 0
        (nor -1 when signed), shift amounts lie in [0, bits), int1 operands only meet
        AND/OR/XOR and comparisons, integers never meet MAXIMUM_NAN/MINIMUM_NAN; comparisons
        return int1."""

    def approximate_divide(self, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        """``a / b`` for a DIV whose attrs allow the bound the target declares (``Target.approximate``);
        the exact quotient unless a backend has a faster one."""
        return self.binary(Op.DIV, a, b, dtype)

    @abc.abstractmethod
    def unary(self, op: Op, a: Handle, dtype: DType) -> Handle:
        """NEG, NOT, a MATH op or ISNAN (int1 result) on an operand of ``dtype``."""

    def math_fn(self, fn: MathFunction, args: Sequence[Handle], dtypes: Sequence[DType]) -> Handle:
        """MATH_FN ``fn`` (core/mathfns.py) on operands of ``dtypes``; its result type is
        ``fn.result_dtype(dtypes[0])``."""
        raise UnsupportedError(f"libdevice.{fn.name} is not supported on {self.target.backend}")

    @abc.abstractmethod
    def fma(self, a: Handle, b: Handle, c: Handle, dtype: DType) -> Handle:
        """a * b + c, rounded once for floats, wrapping for ints."""

    @abc.abstractmethod
    def cast(self, a: Handle, src: DType, dst: DType, rounding: str = "rtne") -> Handle:
        """CAST semantics: RNE (or ``rtz``) for floats, float->int truncates and saturates."""

    @abc.abstractmethod
    def bitcast(self, a: Handle, src: ScalarType, dst: ScalarType) -> Handle:
        """Same bits, new type (equal widths; or pointer -> pointer)."""

    @abc.abstractmethod
    def select(self, c: Handle, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        """c ? a : b."""

    @abc.abstractmethod
    def ptr_offset(self, p: Handle, offset: Handle, ptr: PointerType, offset_dtype: DType) -> Handle:
        """p + offset elements."""

    @abc.abstractmethod
    def ptr_to_int(self, p: Handle, ptr: PointerType) -> Handle:
        """The address as int64."""

    @abc.abstractmethod
    def int_to_ptr(self, a: Handle, ptr: PointerType) -> Handle:
        """An int64 address as a pointer."""

    # ------------------------------------------------------------ global memory
    @abc.abstractmethod
    def load(self, p: Handle, dtype: DType, mask: Handle | None, other: Handle | None) -> Handle:
        """mask ? *p : other  (other defaults to 0; *p is not touched when mask is false)."""

    def load_volatile(self, p: Handle, dtype: DType, mask: Handle | None, other: Handle | None) -> Handle:
        """``load`` that reads memory each time it runs (``volatile=True``: another program may be
        writing it, as in a spin-wait); a target whose loads are never cached keeps ``load``."""
        return self.load(p, dtype, mask, other)

    @abc.abstractmethod
    def load_vector(self, p: Handle, dtype: DType, width: int, mask: Handle | None,
                    others: Sequence[Handle] | None) -> list[Handle]:
        """``width`` consecutive elements from p (aligned to width * itemsize bytes),
        all guarded by the one ``mask``."""

    @abc.abstractmethod
    def store(self, p: Handle, value: Handle, dtype: DType, mask: Handle | None) -> None:
        """if (mask) *p = value."""

    @abc.abstractmethod
    def store_vector(self, p: Handle, values: Sequence[Handle], dtype: DType,
                     mask: Handle | None) -> None:
        """Store len(values) consecutive, aligned elements under one mask."""

    @abc.abstractmethod
    def atomic_rmw(self, kind: str, p: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc, sem: str = "acq_rel", scope: str = "gpu") -> Handle:
        """old = *p; *p = kind(old, value) atomically where mask (add/max/min/and/or/
        xor/xchg; float max/min ignore NaN); returns old (unspecified where masked).
        ``sem`` (relaxed/acquire/release/acq_rel) and ``scope`` (cta/gpu/sys) as Triton's."""

    @abc.abstractmethod
    def atomic_cas(self, p: Handle, cmp: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc, sem: str = "acq_rel", scope: str = "gpu") -> Handle:
        """old = *p; if old == cmp (bitwise): *p = value; atomically; returns old."""

    def vector_ok(self, dtype: DType, width: int) -> bool:
        """Whether ``load_vector``/``store_vector`` take ``width`` elements of ``dtype``."""
        return width in (2, 4)

    def shuffle_xor(self, value: Handle, lane_mask: int, dtype: ScalarType) -> Handle | None:
        """The ``value`` of lane ``lane ^ lane_mask`` of this warp (all lanes active), or None
        when the target has no cross-lane shuffle (the lowering then uses local memory)."""
        return None

    def shuffle_index(self, value: Handle, lane: Handle, dtype: ScalarType) -> Handle | None:
        """The ``value`` of lane ``lane`` (int32, per thread) of this warp (all lanes active), or None
        when the target has no indexed shuffle (the lowering then uses local memory)."""
        return None

    # ------------------------------------------------------------ local memory
    # Levels of a reduction tree done between two barriers: with n, each thread that carries on
    # combines 2**n partials, and at the end every thread combines the last levels itself.
    tree_levels_per_barrier = 1
    # Ops an index expression may take to be recomputed by each thread that needs an element of
    # it, instead of moved through local memory with two barriers (lowering/recompute.py).
    recompute_budget = 8
    # Whether an exchange's trailing barrier may be deferred, its region kept apart from the next
    # exchange's (lowering/exchanges.py): fewer barriers, up to twice the local memory.
    defer_exchange_barriers = False

    def local_itemsize(self, dtype: ScalarType) -> int:
        """Bytes one element of ``dtype`` takes in local memory."""
        return 8 if isinstance(dtype, PointerType) else dtype.itemsize

    @abc.abstractmethod
    def local_load(self, byte_offset: int, index: Handle, dtype: ScalarType) -> Handle:
        """Element ``index`` (int32) of the ``dtype`` array at ``byte_offset`` in local memory."""

    @abc.abstractmethod
    def local_store(self, byte_offset: int, index: Handle, value: Handle, dtype: ScalarType,
                    mask: Handle | None) -> None:
        """if (mask) local[byte_offset as dtype[]][index] = value."""

    @abc.abstractmethod
    def barrier(self) -> None:
        """Work-group barrier that also orders local memory."""

    def program_barrier(self) -> None:
        """``tl.debug_barrier()``: a work-group barrier that also orders global memory among the
        program's threads (CUDA's ``bar.sync`` does both; OpenCL needs the global fence)."""
        self.barrier()

    def local_store_vector(self, byte_offset: int, index: Handle, values: Sequence[Handle],
                           dtype: DType, mask: Handle | None) -> None:
        """Store len(values) consecutive elements from ``index`` (aligned to the vector size)."""
        for i, v in enumerate(values):
            at = index if i == 0 else self.binary(Op.ADD, index, self.constant(i, int32), int32)
            self.local_store(byte_offset, at, v, dtype, mask)

    def local_load_vector(self, byte_offset: int, index: Handle, width: int, dtype: DType) -> list[Handle]:
        """``width`` consecutive elements from ``index`` (aligned to the vector size)."""
        return [self.local_load(byte_offset, index if i == 0 else self.binary(
            Op.ADD, index, self.constant(i, int32), int32), dtype) for i in range(width)]

    # ------------------------------------------------------------ control flow
    @abc.abstractmethod
    def for_range(self, lb: Handle, ub: Handle, step: Handle, iv_dtype: DType,
                  carried: Carried,
                  body: Callable[[Handle, list[Handle]], list[Handle]], unroll: int | None = None) -> list[Handle]:
        """for iv in range(lb, ub, step) (Python semantics, step may be negative):
        carried = body(iv, carried); returns the final carried handles.  ``unroll``
        (``tl.range(loop_unroll_factor=)``) asks the target compiler to unroll by that much."""

    @abc.abstractmethod
    def while_loop(self, carried: Carried, cond: Callable[[list[Handle]], Handle],
                   body: Callable[[list[Handle]], list[Handle]]) -> list[Handle]:
        """while cond(carried): carried = body(carried); returns the final carried."""

    @abc.abstractmethod
    def if_else(self, cond: Handle, result_types: Sequence[ScalarType],
                then: Callable[[], list[Handle]],
                otherwise: Callable[[], list[Handle]]) -> list[Handle]:
        """Structured if with results; both callbacks return len(result_types) handles."""

    @abc.abstractmethod
    def when(self, cond: Handle, body: Callable[[], None]) -> None:
        """if (cond) body(): side effects only, no results."""

    # ------------------------------------------------------------ debug
    @abc.abstractmethod
    def device_print(self, prefix: str, values: Sequence[tuple[Handle, ScalarType]]) -> None:
        """Print ``prefix`` and the values (one line per call and thread)."""
