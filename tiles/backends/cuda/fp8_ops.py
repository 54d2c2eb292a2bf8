"""float8 (``float8e4nv`` = e4m3, ``float8e5`` = e5m2) on the CUDA emitter, sm_89 and newer.

An fp8 value is held as its byte (``i8``).  Conversions go through PTX's paired converters: fp8 ->
float16 is exact (``cvt.rn.f16x2.e4m3x2``), then the usual casts; anything -> float32 -> fp8
rounds to nearest even and saturates (``cvt.rn.satfinite.e4m3x2.f32``, as Triton): past the
format's largest finite value, and +-inf, give +-that value; NaN gives NaN.  Arithmetic computes
in float32 and rounds back once with the same instruction, but an infinite result stays infinite
in e5m2, as the interpreter does (``floats.narrow``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core import dtypes as D
from ...core.dtypes import DType, ScalarType
from ...core.errors import UnsupportedError
from ...core.mathfns import MathFunction
from ...core.ops import COMPARISON, Op
from ...core.semantics import constant
from ..llvm.builder import LLVMBuilder, Reg
from .mma_ops import sm_version

_PTX_NAME = {"float8e4nv": "e4m3", "float8e5": "e5m2"}


def is_fp8(dtype: Any) -> bool:
    return isinstance(dtype, DType) and dtype.name in _PTX_NAME


class PTXFloat8Ops(LLVMBuilder):
    def _need_fp8(self) -> None:
        sm = sm_version(self.t.arch)
        if sm is None or sm < 89:
            raise UnsupportedError(f"float8 needs sm_89 or newer (PTX fp8 conversions); the target is {self.t.arch}")

    def ty(self, dtype: ScalarType) -> str:
        return "i8" if is_fp8(dtype) else super().ty(dtype)

    def constant(self, value: bool | int | float, dtype: DType) -> Reg:
        if is_fp8(dtype):
            byte = constant(value, dtype).view(np.int8)[0]
            return Reg(str(int(byte)), "i8")
        return super().constant(value, dtype)

    def _fp8_to_half(self, a: Reg, src: DType) -> Reg:
        self._need_fp8()
        wide = self._val("i16", f"zext {a} to i16")
        pair = self._val("i32", f'call i32 asm "cvt.rn.f16x2.{_PTX_NAME[src.name]}x2 $0, $1;", "=r,h"({wide})')
        low = self._val("i16", f"trunc {pair} to i16")
        return self._val("half", f"bitcast {low} to half")

    def _float_to_fp8(self, x: Reg, dst: DType, keep_inf: bool = True) -> Reg:
        """``x`` (float) rounded to ``dst``, saturating; with ``keep_inf`` e5m2 keeps infinities."""
        self._need_fp8()
        pair = self._val("i16", f'call i16 asm "cvt.rn.satfinite.{_PTX_NAME[dst.name]}x2.f32 $0, $1, $2;", '
                                f'"=h,f,f"(float 0.0, {x})')
        byte = self._val("i8", f"trunc {pair} to i8")
        if not keep_inf or dst != D.float8e5:
            return byte
        ax = self._call("llvm.fabs.f32", "float", [x])
        inf = self._val("i1", f"fcmp oeq {ax}, 0x7FF0000000000000")
        infinity = self._val("i8", f"or {self._val('i8', f'and {byte}, -128')}, 124")  # satfinite kept the sign
        return self._val("i8", f"select {inf}, {infinity}, {byte}")

    def _float_to_e5m2_toward_zero(self, x: Reg) -> Reg:
        """float32 -> float16 toward zero (``cvt.rz``), then its high byte: e5m2 is float16 without
        its low 8 mantissa bits, so dropping them truncates again, and two truncations are one.
        Finite overflow gives the largest finite value, infinities stay; NaN is made e5m2's NaN."""
        half = self.cast(x, D.float32, D.float16, "rtz")
        bits = self._val("i16", f"bitcast {half} to i16")
        high = self._val("i8", f"trunc {self._val('i16', f'lshr {bits}, 8')} to i8")
        nan = self._val("i1", f"fcmp uno {x}, 0.0")
        return self._val("i8", f"select {nan}, i8 127, {high}")

    def _widen_fp8(self, a: Reg, dtype: DType) -> Reg:
        return self._val("float", f"fpext {self._fp8_to_half(a, dtype)} to float")

    def cast(self, a: Any, src: DType, dst: DType, rounding: str = "rtne") -> Reg:
        if src == dst or not (is_fp8(src) or is_fp8(dst)):
            return super().cast(a, src, dst, rounding)  # type: ignore[misc]
        if is_fp8(src):
            half = self._fp8_to_half(a, src)
            return half if dst == D.float16 else self.cast(half, D.float16, dst, rounding)
        if rounding == "rtz" and dst == D.float8e5:
            return self._float_to_e5m2_toward_zero(a if src == D.float32 else self.cast(a, src, D.float32, "rtz"))
        if rounding == "rtz":
            raise UnsupportedError(f"fp_downcast_rounding='rtz' to {dst} is not supported on cuda (as in Triton, "
                                   "only float8e5 has it): cast to float8e5, or round to nearest")
        x = a if src == D.float32 else self.cast(a, src, D.float32)
        return self._float_to_fp8(x, dst, keep_inf=False)

    def binary(self, op: Op, a: Any, b: Any, dtype: ScalarType) -> Reg:
        if not is_fp8(dtype):
            return super().binary(op, a, b, dtype)  # type: ignore[misc]
        assert isinstance(dtype, DType)
        r = self.binary(op, self._widen_fp8(a, dtype), self._widen_fp8(b, dtype), D.float32)
        return r if op in COMPARISON else self._float_to_fp8(r, dtype)

    def unary(self, op: Op, a: Any, dtype: DType) -> Reg:
        if not is_fp8(dtype):
            return super().unary(op, a, dtype)  # type: ignore[misc]
        r = self.unary(op, self._widen_fp8(a, dtype), D.float32)
        return r if op is Op.ISNAN else self._float_to_fp8(r, dtype)

    def fma(self, a: Any, b: Any, c: Any, dtype: DType) -> Reg:
        if not is_fp8(dtype):
            return super().fma(a, b, c, dtype)  # type: ignore[misc]
        r = self.fma(self._widen_fp8(a, dtype), self._widen_fp8(b, dtype), self._widen_fp8(c, dtype), D.float32)
        return self._float_to_fp8(r, dtype)

    def math_fn(self, fn: MathFunction, args: Sequence[Any], dtypes: Sequence[DType]) -> Reg:
        if any(is_fp8(d) for d in dtypes):
            raise UnsupportedError(f"libdevice.{fn.name} on float8 is not supported on cuda: cast to float32 first")
        return super().math_fn(fn, args, dtypes)  # type: ignore[misc]
