"""Planted defects in the atomics and memory-ordering lowering (``planted.py``'s mechanism: each
swaps one named function or table while a backend compiles).

Three show as wrong values on pocl's CPU device, so the ci profile's ``sync`` family reports them
(``test_planted.py: CAUGHT_BY``).  The others are ordering defects that a CPU device with
coherent memory, running a work-group's work-items one after another between barriers, cannot
exhibit; ``test_sync_codegen.py`` catches them in the code the backend emits for the ``sync``
family's kernels (``CODEGEN``: defect -> the check that must reject its code).
"""

from __future__ import annotations

from typing import Any

from tiles.core.ops import Op

from .planted import MEMORY, Planted, _method

LOWER_RULES = "tiles.backends.lowering.lower:RULES"  # op -> lowering rule, looked up per instruction
SHARE = "tiles.backends.lowering.memory:_share_from_owners"


# ---------------------------------------------------------------- seen on pocl (wrong values)

class ScalarAtomicPerThread(Planted):
    """A scalar atomic (one address per program) runs in every thread instead of in its owner:
    ``tl.atomic_add(counter, 1)`` adds ``32 * num_warps`` per program."""
    name = "planted-scalar-atomic-per-thread"
    target_name = LOWER_RULES

    @staticmethod
    def replace(original: Any) -> Any:
        atomic = original[Op.ATOMIC]

        def rule(lw: Any, instr: Any) -> Any:
            if getattr(instr.operands[0].type, "shape", ()) != ():
                return atomic(lw, instr)
            lw.owner = lambda layout, j: None  # every thread "owns" the scalar
            try:
                return atomic(lw, instr)
            finally:
                del lw.owner
        return {**original, Op.ATOMIC: rule}


class AtomicResultNotBroadcast(Planted):
    """An atomic's returned old value stays in the thread that ran it: the other threads of the
    program read 0 (no copy through local memory to the copies of the element)."""
    name = "planted-atomic-old-not-broadcast"
    target_name = SHARE

    @staticmethod
    def replace(original: Any) -> Any:
        return lambda lw, instr, olds: olds


class FloatAtomicMaxOnBits(Planted):
    """Float ``atomic_max``/``atomic_min`` as the integer atomic on the bit patterns: right for
    non-negative values, backwards for two negatives (-1.0's bits are less than -2.0's)."""
    name = "planted-float-atomic-max-int"
    target_name = f"{MEMORY}.atomic_rmw"

    @staticmethod
    def replace(original: Any) -> Any:
        def atomic_rmw(self: Any, kind: str, p: Any, value: Any, dtype: Any, mask: Any, loc: Any,
                       *order: Any) -> Any:
            if not (dtype.is_floating and str(kind) in ("max", "min") and dtype.bits in (32, 64)):
                return original(self, kind, p, value, dtype, mask, loc, *order)
            t, it = self.d.register[dtype], ("int" if dtype.bits == 32 else "long")
            fn = self.d.atomic_rmw[dtype.bits].format(kind=kind)
            bits = self.d.reinterpret.format(t=it, a=value)
            old = self._tmp(t, f"({t})0")
            call = f"{fn}(({self._atomic_ptr(it)})({p}), {bits})"
            self._line(f"if ({mask or 'true'}) {{ {old} = {self.d.reinterpret.format(t=t, a=call)}; }}")
            return old
        return atomic_rmw


# ---------------------------------------------------------------- seen in the emitted code

class VolatileLoadDropped(Planted):
    """``tl.load(..., volatile=True)`` emitted as a plain load: the compiler may keep the value in a
    register, so a spin-wait never sees the flag change (a hang on a GPU)."""
    name = "planted-volatile-dropped"
    target_name = f"{MEMORY}.load_volatile"
    replace = staticmethod(_method(lambda original, self, p, dtype, mask, other: self.load(p, dtype, mask, other)))


class DeadCodeDropsVolatileSpin(Planted):
    """Dead-code elimination counts a volatile load as pure, so ``while tl.load(flag, volatile=True)
    == 0: pass`` (no result used) disappears and the waiting program reads before the flag is up."""
    name = "planted-dce-drops-spin-wait"
    target_name = "tiles.core.passes:_has_effects"

    @staticmethod
    def replace(original: Any) -> Any:
        from tiles.core.ops import SIDE_EFFECTS

        def _has_effects(instr: Any) -> bool:
            return instr.op in SIDE_EFFECTS or any(_has_effects(i) for r in instr.regions for i in r.instrs)
        return _has_effects


class CudaAcquireDropped(Planted):
    """The LLVM emitter (cuda, rocm) gives compare-and-swap release ordering only: a lock taken
    with ``tl.atomic_cas`` no longer orders the reads of the critical section after it."""
    name = "planted-cuda-cas-acquire-dropped"
    target_name = "tiles.backends.llvm.emitter:LLVMEmitter._cmpxchg"

    @staticmethod
    def replace(original: Any) -> Any:
        def _cmpxchg(self: Any, p: Any, cmp: Any, new: Any, it: str, align: int, sem: str, scope: str) -> Any:
            weaker = {"acq_rel": "release", "acquire": "relaxed"}.get(sem, sem)
            return original(self, p, cmp, new, it, align, weaker, scope)
        return _cmpxchg


class CudaReleaseDropped(Planted):
    """CUDA's read-modify-write atomics get acquire ordering only: the ``tl.atomic_xchg`` that
    releases a lock no longer publishes the critical section's stores."""
    name = "planted-cuda-rmw-release-dropped"
    target_name = "tiles.backends.cuda.atomic_ops:PTXAtomicOps.atomic_rmw"

    @staticmethod
    def replace(original: Any) -> Any:
        def atomic_rmw(self: Any, kind: str, p: Any, value: Any, dtype: Any, mask: Any, loc: Any,
                       sem: str = "acq_rel", scope: str = "gpu") -> Any:
            weaker = {"acq_rel": "acquire", "release": "relaxed"}.get(sem, sem)
            return original(self, kind, p, value, dtype, mask, loc, weaker, scope)
        return atomic_rmw


VALUE_DEFECTS: tuple[type[Planted], ...] = (ScalarAtomicPerThread, AtomicResultNotBroadcast, FloatAtomicMaxOnBits)
CODE_DEFECTS: tuple[type[Planted], ...] = (VolatileLoadDropped, DeadCodeDropsVolatileSpin, CudaAcquireDropped,
                                           CudaReleaseDropped)
DEFECTS = VALUE_DEFECTS
TARGETS = {d.name: d.target_name for d in VALUE_DEFECTS + CODE_DEFECTS}
