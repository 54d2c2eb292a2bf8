"""Read-modify-write atomics as PTX's own ``atom.<sem>.<scope>.global.<op>.<type>``, as Triton emits them.

LLVM's NVPTX code generator drops the ordering (and the scope) of ``atomicrmw``: every
``tl.atomic_add``/``tl.atomic_xchg`` came out relaxed, so tutorial 05's lock release published its
stores late.  Inline PTX carries Triton's ``sem`` and ``scope`` on the instruction itself.  Kinds
and types PTX has no single instruction for here (16-bit floats, float max/min) keep the generic
path: fences around a relaxed ``atomicrmw``, or a ``cmpxchg`` loop, which LLVM orders itself.
"""

from __future__ import annotations

from typing import Any

from ...core.dtypes import DType
from ...core.ir import Loc
from ..llvm.builder import LLVMBuilder, Reg

# register constraint and LLVM type of each operand width / float kind
_INT_OPERAND = {32: ("r", "i32"), 64: ("l", "i64")}
_FLOAT_OPERAND = {32: ("f", "float"), 64: ("d", "double")}
_PTX_SCOPE = {"cta": "cta", "gpu": "gpu", "sys": "sys"}


def ptx_atomic(kind: str, dtype: DType) -> tuple[str, str, str] | None:
    """(``op.type`` suffix, constraint letter, LLVM type) of PTX's atom for ``kind`` on ``dtype``."""
    if dtype.bits not in (32, 64) or dtype.is_bool:
        return None
    if dtype.is_floating:
        if kind != "add":  # xchg: fences around atomicrmw; max/min: a cmpxchg loop
            return None
        letter, ty = _FLOAT_OPERAND[dtype.bits]
        return f"add.f{dtype.bits}", letter, ty
    letter, ty = _INT_OPERAND[dtype.bits]
    sign = "s" if dtype.is_signed else "u"
    suffix = {"add": f"add.u{dtype.bits}", "and": f"and.b{dtype.bits}", "or": f"or.b{dtype.bits}",
              "xor": f"xor.b{dtype.bits}", "xchg": f"exch.b{dtype.bits}",
              "max": f"max.{sign}{dtype.bits}", "min": f"min.{sign}{dtype.bits}"}.get(kind)
    return (suffix, letter, ty) if suffix else None


class PTXAtomicOps(LLVMBuilder):
    def atomic_rmw(self, kind: str, p: Any, value: Any, dtype: DType, mask: Any, loc: Loc,
                   sem: str = "acq_rel", scope: str = "gpu") -> Reg:
        form = ptx_atomic(kind, dtype)
        if form is None:
            return super().atomic_rmw(kind, p, value, dtype, mask, loc, sem, scope)  # type: ignore[misc, no-any-return]
        suffix, letter, ty = form
        instruction = f"atom.{sem}.{_PTX_SCOPE[scope]}.global.{suffix}"

        def make() -> Reg:
            return self._val(ty, f'call {ty} asm sideeffect "{instruction} $0, [$1], $2;", '
                                 f'"={letter},l,{letter},~{{memory}}"({p}, {value})')
        return self._guarded(mask, ty, make, self._zero(dtype))  # type: ignore[attr-defined, no-any-return]
