"""Roundings other than IEEE's nearest on the CUDA emitter: Triton's float32 ``/`` (``div.full.f32``,
within 2 ulp, declared in ``Target.approximate``) and round-toward-zero float downcasts
(``fp_downcast_rounding="rtz"``).

LLVM's ``fptrunc`` rounds to nearest even only, so these go through PTX's ``cvt.rz``: float32 to
float16 or bfloat16, float64 to float32.  float64 to a 16-bit float truncates to float32 first:
float32 holds every 16-bit float, so the two truncations give the one.  As IEEE round toward zero
(and the interpreter's ``floats.narrow``): a finite value past the format's largest gives that
largest finite value, infinities and NaNs stay what they are.  fp8 destinations: float8e5 from
the float16 truncation (``fp8_ops.py``), float8e4nv refused as Triton does.
"""

from __future__ import annotations

from typing import Any

from ...core import dtypes as D
from ...core.dtypes import DType
from ...core.ops import Op
from ..llvm.builder import LLVMBuilder, Reg

# (source, destination) -> the cvt, its inline-asm constraints, the type it returns
_CVT_RZ = {
    ("float32", "float16"): ("cvt.rz.f16.f32", "=h,f", "i16"),
    ("float32", "bfloat16"): ("cvt.rz.bf16.f32", "=h,f", "i16"),
    ("float64", "float32"): ("cvt.rz.f32.f64", "=f,d", "float"),
}


class PTXRoundingOps(LLVMBuilder):
    def approximate_divide(self, a: Any, b: Any, dtype: Any) -> Reg:
        """float32 ``/`` as Triton's: ``div.full.f32`` (2 ulp over the full range; cuda declares the bound)."""
        if dtype != D.float32:
            return self.binary(Op.DIV, a, b, dtype)  # type: ignore[attr-defined, no-any-return]
        return self._call("llvm.nvvm.div.full", "float", [a, b])

    def cast(self, a: Any, src: DType, dst: DType, rounding: str = "rtne") -> Reg:
        if rounding == "rtz" and src == D.float64 and dst in (D.float16, D.bfloat16):
            return self.cast(self.cast(a, src, D.float32, "rtz"), D.float32, dst, "rtz")
        cvt = _CVT_RZ.get((src.name, dst.name)) if rounding == "rtz" else None
        if cvt is None:
            return super().cast(a, src, dst, rounding)  # type: ignore[misc]
        op, constraints, result = cvt
        r = self._val(result, f'call {result} asm "{op} $0, $1;", "{constraints}"({a})')
        return r if result == "float" else self._val(self.ty(dst), f"bitcast {r} to {self.ty(dst)}")
