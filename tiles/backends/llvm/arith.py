"""Arithmetic, math functions, conversions and pointer arithmetic as LLVM IR.

16-bit floats compute in fp32 and round back (exact for +, -, *, / and sqrt: fp32
holds more than twice their precision).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core import dtypes as D
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.mathfns import MathFunction
from ...core.ops import Op
from .builder import (
    _FCMP,
    _ICMP,
    _INT_TY,
    LN2,
    LOG2E,
    LLVMBuilder,
    Reg,
    _float_rank,
    _hex_double,
    _zero_literal,
)
from .mathfn import lower_math_fn, nextafter


class LLVMArithmetic(LLVMBuilder):
    # ------------------------------------------------------------ arithmetic
    def binary(self, op: Op, a: Any, b: Any, dtype: ScalarType) -> Reg:
        if isinstance(dtype, PointerType):
            a, b = self.ptr_to_int(a, dtype), self.ptr_to_int(b, dtype)
            dtype = D.int64
        if dtype.is_floating:
            return self._float_binary(op, a, b, dtype)
        return self._int_binary(op, a, b, dtype)

    def _int_binary(self, op: Op, a: Reg, b: Reg, dtype: DType) -> Reg:
        ty = a.ty
        signed = dtype.is_signed
        simple = {Op.ADD: "add", Op.SUB: "sub", Op.MUL: "mul", Op.AND: "and", Op.OR: "or", Op.XOR: "xor"}
        if op in simple:
            return self._val(ty, f"{simple[op]} {a}, {b.name}")
        if op in _ICMP:
            pred = _ICMP[op] if op in (Op.EQ, Op.NE) else ("s" if signed else "u") + _ICMP[op]
            return self._val("i1", f"icmp {pred} {a}, {b.name}")
        if op in (Op.MAXIMUM, Op.MINIMUM):
            pred = ("s" if signed else "u") + ("gt" if op is Op.MAXIMUM else "lt")
            c = self._val("i1", f"icmp {pred} {a}, {b.name}")
            return self._val(ty, f"select {c}, {a}, {b}")
        # legalize.py has ruled out divisors 0 and -1 and shift amounts outside [0, bits)
        if op in (Op.IDIV, Op.MOD):
            kind = ("s" if signed else "u") + ("div" if op is Op.IDIV else "rem")
            return self._val(ty, f"{kind} {a}, {b.name}")
        if op in (Op.SHL, Op.SHR):
            kind = "shl" if op is Op.SHL else ("ashr" if signed else "lshr")
            return self._val(ty, f"{kind} {a}, {b.name}")
        if op is Op.UMULHI:
            wide = _INT_TY[dtype.bits * 2]  # unsigned on every type, as Triton's tt.mulhiui
            xa = self._val(wide, f"zext {a} to {wide}")
            xb = self._val(wide, f"zext {b} to {wide}")
            p = self._val(wide, f"mul {xa}, {xb.name}")
            hi = self._val(wide, f"lshr {p}, {dtype.bits}")
            return self._val(ty, f"trunc {hi} to {ty}")
        raise UnsupportedError(f"integer {op.value} has no LLVM lowering")

    def _float_binary(self, op: Op, a: Reg, b: Reg, dtype: DType) -> Reg:
        x, y = self._up(a, dtype), self._up(b, dtype)
        ft = x.ty
        if op in _FCMP:
            return self._val("i1", f"fcmp {_FCMP[op]} {x}, {y.name}")
        simple = {Op.ADD: "fadd", Op.SUB: "fsub", Op.MUL: "fmul", Op.DIV: "fdiv"}
        if op is Op.MOD:
            r = self._fmod(x, y)
        elif op in simple:
            # No `contract`: a*b+c rounds twice, exactly as the interpreter does (use tl.fma to fuse).
            r = self._val(ft, f"{simple[op]} {x}, {y.name}")
        elif op in (Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN):
            name = {Op.MAXIMUM: "maxnum", Op.MINIMUM: "minnum", Op.MAXIMUM_NAN: "maximum",
                    Op.MINIMUM_NAN: "minimum"}[op]
            r = self._call(f"llvm.{name}.{self._suffix(ft)}", ft, [x, y])
        else:
            raise UnsupportedError(f"floating-point {op.value} has no LLVM lowering")
        return self._down(r, dtype)

    def _fmod(self, x: Reg, y: Reg) -> Reg:
        """C's fmod, exactly: from the target's math library, else by long division on the
        significands (LLVM's own `frem` expansion on GPUs divides, truncates and multiplies back,
        which is wrong once the quotient is large)."""
        fn = (self.t.math_f64 if x.ty == "double" else self.t.math_f32).get("fmod")
        if fn is None:
            from ..lowering.fmod import exact_fmod
            return exact_fmod(self, x, y, D.float64 if x.ty == "double" else D.float32)  # type: ignore[arg-type]
        return self._call(fn, x.ty, [x, y])

    @staticmethod
    def _suffix(ft: str) -> str:
        return {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16"}[ft]

    def unary(self, op: Op, a: Any, dtype: DType) -> Reg:
        ty = a.ty
        if op is Op.NOT:
            return self._val(ty, f"xor {a}, {'true' if dtype.is_bool else -1}")
        if op is Op.NEG:
            if dtype.is_floating:
                return self._val(ty, f"fneg {a}")
            return self._val(ty, f"sub {ty} 0, {a.name}")
        if op is Op.ISNAN:
            return self._val("i1", f"fcmp uno {a}, {a.name}")
        if op is Op.ABS:
            if dtype.is_floating:
                return self._call(f"llvm.fabs.{self._suffix(ty)}", ty, [a])
            neg = self._val(ty, f"sub {ty} 0, {a.name}")
            c = self._val("i1", f"icmp slt {a}, 0")
            return self._val(ty, f"select {c}, {neg}, {a}")
        x = self._up(a, dtype)
        return self._down(self._math(op, x), dtype)

    def _math(self, op: Op, x: Reg) -> Reg:
        ft = x.ty
        sfx = self._suffix(ft)
        exact = {Op.SQRT: "sqrt", Op.FLOOR: "floor", Op.CEIL: "ceil"}
        if op in exact:
            return self._call(f"llvm.{exact[op]}.{sfx}", ft, [x])
        if op is Op.RSQRT:
            s = self._call(f"llvm.sqrt.{sfx}", ft, [x])
            return self._val(ft, f"fdiv {ft} {self._one(ft)}, {s.name}")
        name = {Op.EXP: "exp", Op.EXP2: "exp2", Op.LOG: "log", Op.LOG2: "log2", Op.SIN: "sin",
                Op.COS: "cos", Op.ERF: "erf"}.get(op)
        if name is None:
            raise UnsupportedError(f"{op.value} has no LLVM lowering")
        if ft == "double":
            fn = self.t.math_f64.get(name)
            if fn is None:
                raise UnsupportedError(f"{op.value} on float64 is not supported on {self.target.backend} "
                                       "(no math library found); cast to float32")
            return self._call(fn, "double", [x])
        if name in self.t.math_f32:
            return self._f32(name, x)
        if op is Op.EXP:
            y = self._val(ft, f"fmul {x}, {_hex_double(float(np.float32(LOG2E)))}")
            return self._f32("exp2", y)
        if op is Op.LOG:
            y = self._f32("log2", x)
            return self._val(ft, f"fmul {y}, {_hex_double(float(np.float32(LN2)))}")
        if op is Op.ERF:
            return self._erf(x)
        return self._f32(name, x)

    def _f32(self, name: str, x: Reg) -> Reg:
        """An fp32 math function: the target's choice (intrinsic or library), else llvm.<name>.f32."""
        fn = self.t.math_f32.get(name, f"llvm.{name}.f32")
        return self._call(fn, "float", [x], "afn" if fn.startswith("llvm.") else "")

    def _one(self, ft: str) -> str:
        return _hex_double(1.0)

    def _erf(self, x: Reg) -> Reg:
        """erf(x) = sign(x) (1 - t poly(t) exp(-x^2)), t = 1/(1 + p|x|) (max abs error 1.2e-7)."""
        ax = self._call("llvm.fabs.f32", "float", [x])
        coeffs = (1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                  -1.13520398, 1.48851587, -0.82215223, 0.17087277)
        t = self._val("float", f"fmul float {_hex_double(float(np.float32(0.5)))}, {ax.name}")
        t = self._val("float", f"fadd {t}, {_hex_double(1.0)}")
        t = self._val("float", f"fdiv float {_hex_double(1.0)}, {t.name}")
        poly = Reg(_hex_double(float(np.float32(coeffs[-1]))), "float")
        for c in reversed(coeffs[:-1]):
            poly = self._call("llvm.fma.f32", "float", [t, poly, Reg(_hex_double(float(np.float32(c))), "float")])
        x2 = self._val("float", f"fmul {ax}, {ax.name}")
        tp = self._val("float", f"fmul {t}, {poly.name}")
        e = self._val("float", f"fsub {tp}, {x2.name}")
        e = self._val("float", f"fadd {e}, {_hex_double(float(np.float32(-1.26551223)))}")
        e = self._val("float", f"fmul {e}, {_hex_double(float(np.float32(LOG2E)))}")
        ex = self._f32("exp2", e)
        tau = self._val("float", f"fmul {t}, {ex.name}")
        r = self._val("float", f"fsub float {_hex_double(1.0)}, {tau.name}")
        return self._call("llvm.copysign.f32", "float", [r, x])

    def math_fn(self, fn: MathFunction, args: Sequence[Any], dtypes: Sequence[DType]) -> Reg:
        return lower_math_fn(self, fn, args, dtypes)

    def fma(self, a: Any, b: Any, c: Any, dtype: DType) -> Reg:
        if not dtype.is_floating:
            p = self._val(a.ty, f"mul {a}, {b.name}")
            return self._val(a.ty, f"add {p}, {c.name}")
        x, y, z = self._up(a, dtype), self._up(b, dtype), self._up(c, dtype)
        if self._is_half(dtype):
            return self._down(self._fma_round_odd(x, y, z), dtype)
        return self._down(self._call(f"llvm.fma.{self._suffix(x.ty)}", x.ty, [x, y, z]), dtype)

    def _fma_round_odd(self, x: Reg, y: Reg, z: Reg) -> Reg:
        """``x * y + z`` of 16-bit floats widened to float, rounded to odd (the last bit set where
        inexact), so that narrowing it is the one rounding of the exact result: the product is exact
        in float, the sum's error comes from TwoSum.  A float fma then a narrowing rounds twice
        (8.8125 * -6 + 2^-126 gave bfloat16 -53, not -52.75)."""
        f = "float"
        p = self._val(f, f"fmul {x}, {y.name}")
        s = self._val(f, f"fadd {p}, {z.name}")
        v = self._val(f, f"fsub {s}, {p.name}")
        p_err = self._val(f, f"fsub {p}, {self._val(f, f'fsub {s}, {v.name}').name}")
        err = self._val(f, f"fadd {p_err}, {self._val(f, f'fsub {z}, {v.name}').name}")
        inexact = self._val("i1", f"fcmp one {err}, 0.0")  # false for NaN (an infinite sum)
        low = self._val("i32", f"and {self._val('i32', f'bitcast {s} to i32')}, 1")
        nudge = self._val("i1", f"and i1 {inexact.name}, {self._val('i1', f'icmp eq {low}, 0').name}")
        toward = self._val(f, f"select {self._val('i1', f'fcmp ogt {err}, 0.0')}, float {_hex_double(np.inf)}, "
                           f"float {_hex_double(-np.inf)}")
        return self._val(f, f"select {nudge}, {nextafter(self, s, toward)}, {s}")

    def cast(self, a: Any, src: DType, dst: DType, rounding: str = "rtne") -> Reg:
        st, dt = self.ty(src), self.ty(dst)
        if src == dst:
            return a
        if dst.is_bool:
            if src.is_floating:
                return self._val("i1", f"fcmp une {a}, {_zero_literal(st)}")
            return self._val("i1", f"icmp ne {a}, 0")
        if src.is_floating and dst.is_floating:
            if rounding == "rtz" and src.bits > dst.bits:
                raise UnsupportedError("fp_downcast_rounding='rtz' is not supported on "
                                       f"{self.target.backend}")
            if self._is_half(src) and self._is_half(dst):
                a = self._val("float", f"fpext {a} to float")
                st = "float"
            op = "fpext" if _float_rank(st) < _float_rank(dt) else "fptrunc"
            return self._val(dt, f"{op} {Reg(a.name, st)} to {dt}")
        if src.is_floating:
            x = self._up(a, src)
            sat = "fptosi" if dst.is_signed else "fptoui"
            return self._call(f"llvm.{sat}.sat.{dt}.{self._suffix(x.ty)}", dt, [x])
        if dst.is_floating:
            conv = "sitofp" if src.is_signed else "uitofp"
            if self._is_half(dst) and src.bits <= 16:  # exact in float32, then one rounding
                f = self._val("float", f"{conv} {a} to float")
                return self._val(dt, f"fptrunc {f} to {dt}")
            return self._val(dt, f"{conv} {a} to {dt}")
        if src.bits == dst.bits:
            return Reg(a.name, dt)
        if src.bits > dst.bits:
            return self._val(dt, f"trunc {a} to {dt}")
        ext = "sext" if src.is_signed else "zext"
        return self._val(dt, f"{ext} {a} to {dt}")

    def bitcast(self, a: Any, src: ScalarType, dst: ScalarType) -> Reg:
        if isinstance(src, PointerType) or isinstance(dst, PointerType):
            return Reg(a.name, self.ty(dst))
        return self._val(self.ty(dst), f"bitcast {a} to {self.ty(dst)}")

    def select(self, c: Any, a: Any, b: Any, dtype: ScalarType) -> Reg:
        return self._val(a.ty, f"select {c}, {a}, {b}")

    def ptr_offset(self, p: Any, offset: Any, ptr: PointerType, offset_dtype: DType) -> Reg:
        if not offset_dtype.is_signed and offset_dtype.bits < 64:
            offset = self._val("i64", f"zext {offset} to i64")
        elif offset_dtype.bits < 32:
            offset = self._val("i32", f"sext {offset} to i32")
        return self._val(p.ty, f"getelementptr {self.mem_ty(ptr.element)}, {p}, {offset}")

    def ptr_to_int(self, p: Any, ptr: PointerType) -> Reg:
        return self._val("i64", f"ptrtoint {p} to i64")

    def int_to_ptr(self, a: Any, ptr: PointerType) -> Reg:
        return self._val(self.ty(ptr), f"inttoptr {a} to {self.ty(ptr)}")

