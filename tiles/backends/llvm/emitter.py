"""An ``Emitter`` that writes LLVM IR text for a GPU ``LLVMTarget``.

Handles are ``Reg``s: an SSA name (or literal) with its LLVM type.  16-bit
floats compute in fp32 and round back (exact for +,-,*,/ and sqrt: fp32 holds
more than twice their precision).  Blocks are kept as line lists, so loop
headers can receive their phis after the body is known.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from ...core import dtypes as D
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ...core.ops import Op
from ..base import Target
from ..lowering.emitter import Carried, Emitter
from .target import LLVMTarget


@dataclass(frozen=True)
class Reg:
    name: str
    ty: str

    def __str__(self) -> str:
        return f"{self.ty} {self.name}"


_INT_TY = {1: "i1", 8: "i8", 16: "i16", 32: "i32", 64: "i64", 128: "i128"}
_FLOAT_TY = {"float16": "half", "bfloat16": "bfloat", "float32": "float", "float64": "double"}
_ICMP = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}
_FCMP = {Op.EQ: "oeq", Op.NE: "une", Op.LT: "olt", Op.LE: "ole", Op.GT: "ogt", Op.GE: "oge"}
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _hex_double(x: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]


class LLVMEmitter(Emitter):
    def __init__(self, target: Target, llvm_target: LLVMTarget) -> None:
        self.target = target
        self.t = llvm_target
        self.blocks: dict[str, list[str]] = {}
        self.order: list[str] = []
        self.counter = 0
        self.decls: dict[str, str] = {}
        self.globals: list[str] = []
        self.uses_smem = False
        self.local_bytes = 0
        self.name = ""
        self.params: list[tuple[str, str]] = []
        self.threads = 0
        self.cur = self._new_block("entry")

    # ------------------------------------------------------------ plumbing
    def _new_block(self, hint: str) -> str:
        self.counter += 1
        label = f"{hint}{self.counter}"
        self.blocks[label] = []
        self.order.append(label)
        return label

    def _emit(self, line: str) -> None:
        self.blocks[self.cur].append("  " + line)

    def _val(self, ty: str, rhs: str) -> Reg:
        self.counter += 1
        name = f"%v{self.counter}"
        self._emit(f"{name} = {rhs}")
        return Reg(name, ty)

    def _declare(self, name: str, ret: str, args: Sequence[str]) -> str:
        self.decls.setdefault(name, f"declare {ret} @{name}({', '.join(args)})")
        return name

    def _call(self, fn: str, ret: str, args: Sequence[Reg], flags: str = "") -> Reg:
        self._declare(fn, ret, [a.ty for a in args])
        return self._val(ret, f"call {flags + ' ' if flags else ''}{ret} @{fn}({', '.join(map(str, args))})")

    def _branch(self, cond: Reg, then: str, other: str) -> None:
        self._emit(f"br {cond}, label %{then}, label %{other}")

    def _jump(self, label: str) -> None:
        self._emit(f"br label %{label}")

    # ------------------------------------------------------------ types
    def ty(self, dtype: ScalarType) -> str:
        if isinstance(dtype, PointerType):
            return f"ptr addrspace({self.t.global_addrspace})"
        if dtype.is_floating:
            if dtype.name not in _FLOAT_TY:
                raise UnsupportedError(f"{dtype} arithmetic is not supported on {self.target.backend}")
            return _FLOAT_TY[dtype.name]
        return _INT_TY[dtype.bits]

    def mem_ty(self, dtype: ScalarType) -> str:
        return "i8" if not isinstance(dtype, PointerType) and dtype.is_bool else self.ty(dtype)

    def _to_mem(self, v: Reg, dtype: ScalarType) -> Reg:
        if not isinstance(dtype, PointerType) and dtype.is_bool:
            return self._val("i8", f"zext {v} to i8")
        return v

    def _from_mem(self, v: Reg, dtype: ScalarType) -> Reg:
        if not isinstance(dtype, PointerType) and dtype.is_bool:
            return self._val("i1", f"icmp ne {v}, 0")
        return v

    def _zero(self, dtype: ScalarType) -> Reg:
        if isinstance(dtype, PointerType):
            return Reg("null", self.ty(dtype))
        return self.constant(0, dtype)

    def _is_half(self, dtype: DType) -> bool:
        return dtype.name in ("float16", "bfloat16")

    def _up(self, v: Reg, dtype: DType) -> Reg:
        return self._val("float", f"fpext {v} to float") if self._is_half(dtype) else v

    def _down(self, v: Reg, dtype: DType) -> Reg:
        return self._val(self.ty(dtype), f"fptrunc {v} to {self.ty(dtype)}") if self._is_half(dtype) else v

    # ------------------------------------------------------------ kernel frame
    def begin_kernel(self, name: str, params: Sequence[tuple[str, ScalarType]], threads: int) -> list[Any]:
        self.name, self.threads = name, threads
        handles = []
        for i, (_name, dtype) in enumerate(params):
            reg = Reg(f"%arg{i}", self.ty(dtype))
            self.params.append((reg.ty, reg.name))
            handles.append(reg)
        for axis in "xyz":
            self.params.append(("i32", f"%grid_{axis}"))
        return handles

    def finish(self, local_bytes: int) -> str:
        self._emit("ret void")
        self.local_bytes = local_bytes
        t = self.t
        lines = [f"; tiles.local_bytes = {local_bytes}", f'target triple = "{t.triple}"',
                 f'target datalayout = "{t.data_layout}"', ""]
        if self.uses_smem:
            lines.append(f"@tiles_smem = external addrspace({t.shared_addrspace}) global [0 x i8], align 16")
        lines += self.globals
        cc = f"{t.kernel_calling_conv} " if t.kernel_calling_conv else ""
        args = ", ".join(f"{ty} {n}" for ty, n in self.params)
        lines.append(f"define {cc}void @{self.name}({args}) #0 {{")
        for label in self.order:
            lines.append(f"{label}:")
            lines.extend(self.blocks[label])
        lines.append("}")
        lines += sorted(self.decls.values())
        attrs = " ".join(f'"{k}"="{v.format(threads=self.threads)}"' for k, v in t.kernel_attributes.items())
        lines.append(f"attributes #0 = {{ nounwind {attrs} }}")
        if t.module_flags:
            ids = [f"!{i}" for i in range(len(t.module_flags))]
            lines.append(f"!llvm.module.flags = !{{{', '.join(ids)}}}")
            lines += [f"{i} = {node}" for i, node in zip(ids, t.module_flags)]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ values
    def constant(self, value: bool | int | float, dtype: DType) -> Reg:
        ty = self.ty(dtype)
        if dtype.is_bool:
            return Reg("true" if value else "false", ty)
        if dtype.is_int:
            return Reg(str(int(value)), ty)
        if dtype.name == "float16":
            return Reg("0xH%04X" % int(np.array(value, np.float16).view(np.uint16)), ty)
        if dtype.name == "bfloat16":
            return Reg("0xR%04X" % int(np.array(value, ml_dtypes.bfloat16).view(np.uint16)), ty)
        if dtype.name == "float32":
            return Reg(_hex_double(float(np.float32(value))), ty)
        return Reg(_hex_double(float(value)), ty)

    def thread_id(self) -> Reg:
        return self._call(self.t.thread_id, "i32", [])

    def program_id(self, axis: int) -> Reg:
        return self._call(self.t.block_id[axis], "i32", [])

    def num_programs(self, axis: int) -> Reg:
        return Reg(f"%grid_{'xyz'[axis]}", "i32")

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
        if op in (Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN):
            bigger = op in (Op.MAXIMUM, Op.MAXIMUM_NAN)
            pred = ("s" if signed else "u") + ("gt" if bigger else "lt")
            c = self._val("i1", f"icmp {pred} {a}, {b.name}")
            return self._val(ty, f"select {c}, {a}, {b}")
        if op in (Op.IDIV, Op.MOD):
            return self._int_divmod(op, a, b, dtype)
        if op in (Op.SHL, Op.SHR):
            width = Reg(str(dtype.bits), ty)
            ok = self._val("i1", f"icmp ult {b}, {width.name}")
            safe = self._val(ty, f"select {ok}, {b}, {ty} 0")
            kind = "shl" if op is Op.SHL else ("ashr" if signed else "lshr")
            r = self._val(ty, f"{kind} {a}, {safe.name}")
            if op is Op.SHR and signed:
                fill = self._val(ty, f"ashr {a}, {dtype.bits - 1}")
            else:
                fill = Reg("0", ty)
            return self._val(ty, f"select {ok}, {r}, {fill}")
        if op is Op.UMULHI:
            wide = _INT_TY[dtype.bits * 2]
            ext = "sext" if signed else "zext"
            xa = self._val(wide, f"{ext} {a} to {wide}")
            xb = self._val(wide, f"{ext} {b} to {wide}")
            p = self._val(wide, f"mul {xa}, {xb.name}")
            hi = self._val(wide, f"lshr {p}, {dtype.bits}")
            return self._val(ty, f"trunc {hi} to {ty}")
        raise UnsupportedError(f"integer {op.value} has no LLVM lowering")

    def _int_divmod(self, op: Op, a: Reg, b: Reg, dtype: DType) -> Reg:
        ty = a.ty
        zero = self._val("i1", f"icmp eq {b}, 0")
        safe_b = self._val(ty, f"select {zero}, {ty} 1, {b}")
        if dtype.is_signed:
            # INT_MIN / -1 overflows in LLVM; it wraps to INT_MIN (remainder 0) here.
            neg1 = self._val("i1", f"icmp eq {safe_b}, -1")
            safe_b = self._val(ty, f"select {neg1}, {ty} 1, {safe_b}")
            if op is Op.IDIV:
                q = self._val(ty, f"sdiv {a}, {safe_b.name}")
                negq = self._val(ty, f"sub {ty} 0, {q.name}")
                q = self._val(ty, f"select {neg1}, {negq}, {q}")
            else:
                r = self._val(ty, f"srem {a}, {safe_b.name}")
                q = self._val(ty, f"select {neg1}, {ty} 0, {r}")
        else:
            q = self._val(ty, f"{'udiv' if op is Op.IDIV else 'urem'} {a}, {safe_b.name}")
        by_zero = Reg("-1", ty) if op is Op.IDIV else a
        return self._val(ty, f"select {zero}, {by_zero}, {q}")

    def _float_binary(self, op: Op, a: Reg, b: Reg, dtype: DType) -> Reg:
        x, y = self._up(a, dtype), self._up(b, dtype)
        ft = x.ty
        if op in _FCMP:
            return self._val("i1", f"fcmp {_FCMP[op]} {x}, {y.name}")
        simple = {Op.ADD: "fadd", Op.SUB: "fsub", Op.MUL: "fmul", Op.DIV: "fdiv", Op.MOD: "frem"}
        if op in simple:
            # No `contract`: a*b+c rounds twice, exactly as the interpreter does (use tl.fma to fuse).
            r = self._val(ft, f"{simple[op]} {x}, {y.name}")
        elif op in (Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN):
            name = {Op.MAXIMUM: "maxnum", Op.MINIMUM: "minnum", Op.MAXIMUM_NAN: "maximum",
                    Op.MINIMUM_NAN: "minimum"}[op]
            r = self._call(f"llvm.{name}.{self._suffix(ft)}", ft, [x, y])
        else:
            raise UnsupportedError(f"floating-point {op.value} has no LLVM lowering")
        return self._down(r, dtype)

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

    def fma(self, a: Any, b: Any, c: Any, dtype: DType) -> Reg:
        if not dtype.is_floating:
            p = self._val(a.ty, f"mul {a}, {b.name}")
            return self._val(a.ty, f"add {p}, {c.name}")
        x, y, z = self._up(a, dtype), self._up(b, dtype), self._up(c, dtype)
        return self._down(self._call(f"llvm.fma.{self._suffix(x.ty)}", x.ty, [x, y, z]), dtype)

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
            if self._is_half(dst):
                f = self._val("float", f"{conv} {a} to float") if src.bits < 32 or True else a
                return self._val(dt, f"fptrunc {f} to {dt}") if src.bits <= 16 else \
                    self._val(dt, f"{conv} {a} to {dt}")
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

    # ------------------------------------------------------------ global memory
    def _guarded(self, mask: Any, ty: str, make: Callable[[], Reg], other: Reg) -> Reg:
        if mask is None:
            return make()
        if mask.name == "true":
            return make()
        if mask.name == "false":
            return other
        then, done = self._new_block("ld"), self._new_block("ldend")
        before = self.cur
        self._branch(mask, then, done)
        self.cur = then
        v = make()
        after = self.cur
        self._jump(done)
        self.cur = done
        return self._val(ty, f"phi {ty} [ {v.name}, %{after} ], [ {other.name}, %{before} ]")

    def load(self, p: Any, dtype: DType, mask: Any, other: Any) -> Reg:
        mt = self.mem_ty(dtype)
        other = other if other is not None else self._zero(dtype)

        def make() -> Reg:
            v = self._val(mt, f"load {mt}, {p}, align {max(dtype.itemsize, 1)}")
            return self._from_mem(v, dtype)
        return self._guarded(mask, self.ty(dtype), make, other)

    def load_vector(self, p: Any, dtype: DType, width: int, mask: Any, others: Any) -> list[Any]:
        mt = self.mem_ty(dtype)
        vt = f"<{width} x {mt}>"
        if others is None:
            other = Reg("zeroinitializer", vt)
        else:
            other = Reg("undef", vt)
            for i, o in enumerate(others):
                other = self._val(vt, f"insertelement {other}, {self._to_mem(o, dtype)}, i32 {i}")
        vec = self._guarded(mask, vt, lambda: self._val(vt, f"load {vt}, {p}, align {dtype.itemsize * width}"),
                            other)
        return [self._from_mem(self._val(mt, f"extractelement {vec}, i32 {i}"), dtype) for i in range(width)]

    def store(self, p: Any, value: Any, dtype: DType, mask: Any) -> None:
        def do() -> None:
            v = self._to_mem(value, dtype)
            self._emit(f"store {v}, {p}, align {max(dtype.itemsize, 1)}")
        self._when(mask, do)

    def store_vector(self, p: Any, values: Sequence[Any], dtype: DType, mask: Any) -> None:
        mt = self.mem_ty(dtype)
        vt = f"<{len(values)} x {mt}>"

        def do() -> None:
            vec = Reg("undef", vt)
            for i, v in enumerate(values):
                vec = self._val(vt, f"insertelement {vec}, {self._to_mem(v, dtype)}, i32 {i}")
            self._emit(f"store {vec}, {p}, align {dtype.itemsize * len(values)}")
        self._when(mask, do)

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return width in (2, 4, 8, 16) and not dtype.is_bool and dtype.itemsize * width <= 16

    def _when(self, mask: Any, body: Callable[[], None]) -> None:
        if mask is None or mask.name == "true":
            body()
            return
        if mask.name == "false":
            return
        then, done = self._new_block("st"), self._new_block("stend")
        self._branch(mask, then, done)
        self.cur = then
        body()
        self._jump(done)
        self.cur = done

    def atomic_rmw(self, kind: str, p: Any, value: Any, dtype: DType, mask: Any, loc: Loc) -> Reg:
        ty = self.ty(dtype)

        def make() -> Reg:
            if dtype.is_floating and kind in ("max", "min"):
                return self._cas_loop(p, value, dtype, Op.MAXIMUM if kind == "max" else Op.MINIMUM)
            if dtype.is_floating:
                op = {"add": "fadd", "xchg": "xchg"}.get(kind)
                if op is None:
                    raise UnsupportedError(f"atomic_{kind} on {dtype}", loc)
            else:
                op = {"add": "add", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg",
                      "max": "max" if dtype.is_signed else "umax",
                      "min": "min" if dtype.is_signed else "umin"}[kind]
            return self._val(ty, f"atomicrmw {op} {p}, {value} acq_rel, align {dtype.itemsize}")
        return self._guarded(mask, ty, make, self._zero(dtype))

    def _cas_loop(self, p: Reg, value: Reg, dtype: DType, op: Op) -> Reg:
        it = _INT_TY[dtype.bits]
        init = self._val(self.ty(dtype), f"load atomic {self.ty(dtype)}, {p} monotonic, align {dtype.itemsize}")
        before = self.cur
        loop, done = self._new_block("cas"), self._new_block("casend")
        self._jump(loop)
        self.cur = loop
        self.counter += 1
        old = Reg(f"%v{self.counter}", self.ty(dtype))
        phi_at = len(self.blocks[loop])
        new = self.binary(op, old, value, dtype)
        oi = self._val(it, f"bitcast {old} to {it}")
        ni = self._val(it, f"bitcast {new} to {it}")
        pair = self._val(f"{{ {it}, i1 }}", f"cmpxchg {p}, {oi}, {ni} acq_rel monotonic, align {dtype.itemsize}")
        got = self._val(it, f"extractvalue {pair}, 0")
        ok = self._val("i1", f"extractvalue {pair}, 1")
        got_f = self._val(self.ty(dtype), f"bitcast {got} to {self.ty(dtype)}")
        self.blocks[loop].insert(phi_at, f"  {old.name} = phi {old.ty} [ {init.name}, %{before} ], "
                                         f"[ {got_f.name}, %{self.cur} ]")
        self._branch(ok, done, loop)
        self.cur = done
        return got_f

    def atomic_cas(self, p: Any, cmp: Any, value: Any, dtype: DType, mask: Any, loc: Loc) -> Reg:
        ty = self.ty(dtype)
        it = _INT_TY[dtype.bits]

        def make() -> Reg:
            c, v = cmp, value
            if dtype.is_floating:
                c = self._val(it, f"bitcast {cmp} to {it}")
                v = self._val(it, f"bitcast {value} to {it}")
            pair = self._val(f"{{ {it}, i1 }}", f"cmpxchg {p}, {c}, {v} acq_rel monotonic, align {dtype.itemsize}")
            old = self._val(it, f"extractvalue {pair}, 0")
            return self._val(ty, f"bitcast {old} to {ty}") if dtype.is_floating else old
        return self._guarded(mask, ty, make, self._zero(dtype))

    def shuffle_xor(self, value: Any, lane_mask: int, dtype: ScalarType) -> Reg | None:
        if not self.t.shuffle_xor or isinstance(dtype, PointerType):
            return None
        bits = 1 if dtype.is_bool else dtype.bits
        if bits == 64:
            wide = self._val("i64", f"bitcast {value} to i64") if dtype.is_floating else value
            lo = self._val("i32", f"trunc {wide} to i32")
            hi64 = self._val("i64", f"lshr {wide}, 32")
            hi = self._val("i32", f"trunc {hi64} to i32")
            slo, shi = self._shfl32(lo, lane_mask), self._shfl32(hi, lane_mask)
            a = self._val("i64", f"zext {slo} to i64")
            b = self._val("i64", f"zext {shi} to i64")
            b = self._val("i64", f"shl {b}, 32")
            r = self._val("i64", f"or {a}, {b.name}")
            return self._val(value.ty, f"bitcast {r} to {value.ty}") if dtype.is_floating else r
        if value.ty == "i32":
            return self._shfl32(value, lane_mask)
        if value.ty == "float":
            i = self._val("i32", f"bitcast {value} to i32")
            return self._val("float", f"bitcast {self._shfl32(i, lane_mask)} to float")
        int_ty = f"i{bits}"
        i = value if not dtype.is_floating else self._val(int_ty, f"bitcast {value} to {int_ty}")
        w = self._val("i32", f"zext {i} to i32")
        s = self._val(int_ty, f"trunc {self._shfl32(w, lane_mask)} to {int_ty}")
        return s if not dtype.is_floating else self._val(value.ty, f"bitcast {s} to {value.ty}")

    def _shfl32(self, v: Reg, lane_mask: int) -> Reg:
        return self._call(self.t.shuffle_xor, "i32", [Reg("-1", "i32"), v, Reg(str(lane_mask), "i32"),
                                                       Reg(str(self.t.warp_size - 1), "i32")])

    # ------------------------------------------------------------ local memory
    def _local_ptr(self, byte_offset: int, index: Any, dtype: ScalarType) -> Reg:
        self.uses_smem = True
        sp = f"ptr addrspace({self.t.shared_addrspace})"
        base = self._val(sp, f"getelementptr i8, {sp} @tiles_smem, i32 {byte_offset}")
        return self._val(sp, f"getelementptr {self.local_ty(dtype)}, {base}, {index}")

    def local_ty(self, dtype: ScalarType) -> str:
        return self.mem_ty(dtype)

    def local_load(self, byte_offset: int, index: Any, dtype: ScalarType) -> Reg:
        q = self._local_ptr(byte_offset, index, dtype)
        lt = self.local_ty(dtype)
        v = self._val(lt, f"load {lt}, {q}")
        return self._from_mem(v, dtype)

    def local_store(self, byte_offset: int, index: Any, value: Any, dtype: ScalarType, mask: Any) -> None:
        def do() -> None:
            q = self._local_ptr(byte_offset, index, dtype)
            self._emit(f"store {self._to_mem(value, dtype)}, {q}")
        self._when(mask, do)

    def local_store_vector(self, byte_offset: int, index: Any, values: Sequence[Any], dtype: DType,
                           mask: Any) -> None:
        if len(values) == 1 or dtype.is_bool:
            super().local_store_vector(byte_offset, index, values, dtype, mask)
            return
        lt = self.local_ty(dtype)
        vt = f"<{len(values)} x {lt}>"

        def do() -> None:
            q = self._local_ptr(byte_offset, index, dtype)
            vec = Reg("undef", vt)
            for i, v in enumerate(values):
                vec = self._val(vt, f"insertelement {vec}, {v}, i32 {i}")
            self._emit(f"store {vec}, {q}, align {dtype.itemsize * len(values)}")
        self._when(mask, do)

    def local_load_vector(self, byte_offset: int, index: Any, width: int, dtype: DType) -> list[Any]:
        if width == 1 or dtype.is_bool:
            return super().local_load_vector(byte_offset, index, width, dtype)
        lt = self.local_ty(dtype)
        vt = f"<{width} x {lt}>"
        q = self._local_ptr(byte_offset, index, dtype)
        vec = self._val(vt, f"load {vt}, {q}, align {dtype.itemsize * width}")
        return [self._val(lt, f"extractelement {vec}, i32 {i}") for i in range(width)]

    # ------------------------------------------------------------ tensor cores
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> tuple[int, int, int] | None:
        m = re.fullmatch(r"sm_(\d+)a?", self.t.arch)
        if m is None or int(m.group(1)) < 80:
            return None
        if in_dtype.name in ("float16", "bfloat16") and acc_dtype.name in ("float32", "float16", "bfloat16"):
            return (16, 8, 16)
        if in_dtype.name == "float32" and acc_dtype.name == "float32" and input_precision == "tf32":
            return (16, 8, 8)
        if in_dtype.name in ("int8", "uint8") and acc_dtype.name == "int32":
            return (16, 8, 32)
        return None

    def mma(self, shape: tuple[int, int, int], a: Sequence[Any], b: Sequence[Any], c: Sequence[Any],
            in_dtype: DType) -> list[Any]:
        m, n, k = shape
        if in_dtype.name == "float16":
            name, it = f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.f32.f32", "<2 x half>"
            a = [self._val(it, f"bitcast {r} to {it}") for r in a]
            b = [self._val(it, f"bitcast {r} to {it}") for r in b]
        else:
            kind = {"bfloat16": "bf16", "float32": "tf32", "int8": "s8", "uint8": "u8"}[in_dtype.name]
            name = f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.{kind}"
        ct = "i32" if in_dtype.is_int else "float"
        st = "{" + ", ".join([ct] * 4) + "}"
        res = self._call(name, st, [*a, *b, *c])
        return [self._val(ct, f"extractvalue {res}, {i}") for i in range(4)]

    def ldmatrix(self, byte_offset: int, byte_index: Any, count: int, trans: bool) -> list[Any]:
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.b16"
        if count == 1:
            return [self._call(name, "i32", [q])]
        st = "{" + ", ".join(["i32"] * count) + "}"
        res = self._call(name, st, [q])
        return [self._val("i32", f"extractvalue {res}, {i}") for i in range(count)]

    def cp_async(self, byte_offset: int, byte_index: Any, p: Any, nbytes: int, mask: Any) -> bool:
        m = re.fullmatch(r"sm_(\d+)a?", self.t.arch)
        if m is None or int(m.group(1)) < 80 or nbytes not in (4, 8, 16):
            return False
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        size = Reg(str(nbytes), "i32") if mask is None else \
            self._val("i32", f"select {mask}, i32 {nbytes}, i32 0")
        kind = "cg" if nbytes == 16 else "ca"
        self._emit(f'call void asm sideeffect "cp.async.{kind}.shared.global [$0], [$1], {nbytes}, $2;", '
                   f'"r,l,r,~{{memory}}"({q}, {p}, {size})')
        return True

    def cp_async_commit(self) -> None:
        self._emit('call void asm sideeffect "cp.async.commit_group;", "~{memory}"()')

    def cp_async_wait(self, pending: int) -> None:
        self._emit(f'call void asm sideeffect "cp.async.wait_group {pending};", "~{{memory}}"()')

    def barrier(self) -> None:
        scope = self.t.barrier_fence_scope
        if scope:
            self._emit(f'fence syncscope("{scope}") release')
        self._declare(self.t.barrier, "void", [])
        self._emit(f"call void @{self.t.barrier}()")
        if scope:
            self._emit(f'fence syncscope("{scope}") acquire')

    # ------------------------------------------------------------ control flow
    def for_range(self, lb: Any, ub: Any, step: Any, iv_dtype: DType, carried: Carried,
                  body: Callable[[Any, list[Any]], list[Any]]) -> list[Any]:
        ity = self.ty(iv_dtype)
        pre = self.cur
        head, loop, done = self._new_block("for"), self._new_block("body"), self._new_block("endfor")
        up = self._val("i1", f"icmp sgt {step}, 0")
        self._jump(head)
        self.cur = head
        iv = self._fresh(ity)
        regs = [self._fresh(self.ty(dt)) for _, dt in carried]
        lt = self._val("i1", f"icmp slt {iv}, {ub.name}")
        gt = self._val("i1", f"icmp sgt {iv}, {ub.name}")
        go = self._val("i1", f"select {up}, {lt}, {gt}")
        self._branch(go, loop, done)
        self.cur = loop
        new = body(iv, regs)
        nxt = self._val(ity, f"add {iv}, {step.name}")
        latch = self.cur
        self._jump(head)
        phis = [f"  {iv.name} = phi {ity} [ {lb.name}, %{pre} ], [ {nxt.name}, %{latch} ]"]
        for r, (init, _), n in zip(regs, carried, new):
            phis.append(f"  {r.name} = phi {r.ty} [ {init.name}, %{pre} ], [ {n.name}, %{latch} ]")
        self.blocks[head][:0] = phis
        self.cur = done
        return regs

    def _fresh(self, ty: str) -> Reg:
        self.counter += 1
        return Reg(f"%v{self.counter}", ty)

    def while_loop(self, carried: Carried, cond: Callable[[list[Any]], Any],
                   body: Callable[[list[Any]], list[Any]]) -> list[Any]:
        pre = self.cur
        head, loop, done = self._new_block("while"), self._new_block("wbody"), self._new_block("endwhile")
        self._jump(head)
        self.cur = head
        regs = [self._fresh(self.ty(dt)) for _, dt in carried]
        c = cond(regs)
        self._branch(c, loop, done)
        self.cur = loop
        new = body(regs)
        latch = self.cur
        self._jump(head)
        self.blocks[head][:0] = [f"  {r.name} = phi {r.ty} [ {i.name}, %{pre} ], [ {n.name}, %{latch} ]"
                                 for r, (i, _), n in zip(regs, carried, new)]
        self.cur = done
        return regs

    def if_else(self, cond: Any, result_types: Sequence[ScalarType], then: Callable[[], list[Any]],
                otherwise: Callable[[], list[Any]]) -> list[Any]:
        tb, eb, done = self._new_block("then"), self._new_block("else"), self._new_block("endif")
        self._branch(cond, tb, eb)
        self.cur = tb
        tv = then()
        t_end = self.cur
        self._jump(done)
        self.cur = eb
        ev = otherwise()
        e_end = self.cur
        self._jump(done)
        self.cur = done
        return [self._val(a.ty, f"phi {a.ty} [ {a.name}, %{t_end} ], [ {b.name}, %{e_end} ]")
                for a, b in zip(tv, ev)]

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        self._when(cond, body)

    def device_print(self, prefix: str, values: Sequence[tuple[Any, ScalarType]]) -> None:
        raise UnsupportedError(f"device_print is not supported on {self.target.backend} yet")


def _zero_literal(ty: str) -> str:
    return _hex_double(0.0) if ty in ("float", "double") else ("0xH0000" if ty == "half" else "0xR0000")


def _float_rank(ty: str) -> int:
    return {"half": 1, "bfloat": 1, "float": 2, "double": 3}[ty]


