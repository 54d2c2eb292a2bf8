"""The C-style emitter: each ``Emitter`` call appends C statements spelled by a ``CDialect``;
handles are C expressions (a variable name or a literal).

Everything here is plain C99 with the dialect's names; a dialect subclass overrides what a
table cannot say (16-bit floats in memory, vector types, math library functions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.floats import narrow
from ...core.ir import Loc
from ...core.ops import COMPARISON, Op
from ..base import Target
from ..lowering.emitter import Carried, Emitter, Handle
from .dialect import NARROW_FLOATS, CDialect
from .guards import GuardedBlocks
from .memory import CMemory

_CMP = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_ARITH = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
_BITS = {Op.AND: "&", Op.OR: "|", Op.XOR: "^"}


def is_literal(h: Handle) -> bool:
    return isinstance(h, str) and h.lstrip("-").replace("u", "").replace("L", "").replace(
        "U", "").isdigit()


class CStyleEmitter(GuardedBlocks, CMemory, Emitter):
    """One kernel as C source in the dialect ``d``."""

    def __init__(self, target: Target, dialect: CDialect, fp64: bool) -> None:
        self.target = target
        self.d = dialect
        self.fp64 = fp64
        self.lines: list[str] = []
        self.indent = 1
        self.count = 0
        self.header = ""
        self.name = ""
        self.helpers: dict[str, str] = {}  # helper name -> C source some call needs
        GuardedBlocks.__init__(self)

    # ------------------------------------------------------------ types and text
    def reg(self, dt: ScalarType) -> str:
        return self.ptr_type(dt) if isinstance(dt, PointerType) else self.d.register[dt]

    def ptr_type(self, p: PointerType) -> str:
        return f"{self.d.global_space}{self.d.memory[p.element]}*"

    def unsigned(self, dt: DType) -> str:
        return self.d.unsigned[max(dt.bits, 8)]

    def _line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def _tmp(self, ctype: str, expr: str) -> str:
        return self._declare(ctype, expr)

    def _decl(self, ctype: str) -> str:
        return self._declare(ctype, None)

    def _round(self, dt: DType, expr: str) -> str:
        """A float expression rounded to ``dt`` (16- and 8-bit floats live in float variables)."""
        if dt in NARROW_FLOATS:
            return f"tiles_round_{NARROW_FLOATS[dt]}({expr})"
        return expr

    # ------------------------------------------------------------ frame
    def begin_kernel(self, name: str, params: Sequence[tuple[str, ScalarType]],
                     threads: int) -> list[Handle]:
        self.name = f"tiles_{name}"
        decls, handles = [], []
        for i, (pname, dt) in enumerate(params):
            arg = f"a{i}_{pname}"
            if not isinstance(dt, PointerType) and dt.is_bool:
                decls.append(f"{self.d.memory[dt]} {arg}")
                handles.append(f"({arg} != 0)")
            else:
                decls.append(f"{self.reg(dt)} {arg}")
                handles.append(arg)
        self.header = self.d.kernel_signature.format(name=self.name, params=", ".join(decls) or "void",
                                                     threads=threads)
        self._line(f"const int tid = {self.d.thread_id};")
        for axis in range(3):
            self._line(f"const int pid{axis} = {self.d.program_id.format(axis=axis)};")
        return handles

    def finish(self, local_bytes: int) -> str:
        pragmas, prelude = list(self.d.pragmas), self.d.prelude
        if self.fp64:
            pragmas = [*self.d.fp64_pragmas, *pragmas]
            prelude += self.d.fp64_prelude
        prelude += "".join(self.helpers.values())
        body = [line for line in self.lines if line]  # guards.py empties a declaration it moved
        if local_bytes:
            body.insert(0, "  " + self.d.local_buffer.format(bytes=local_bytes))
        return "\n".join([*pragmas, prelude, self.header + " {", *body, "}", ""])

    # ------------------------------------------------------------ values
    def constant(self, value: bool | int | float, dtype: DType) -> Handle:
        if dtype.is_floating:
            return float_literal(float(value), dtype)
        return self.int_literal(int(value), dtype)

    def int_literal(self, value: int, dt: DType) -> str:
        if dt.is_bool:
            return "true" if value else "false"
        if dt.bits == 64:
            signed, unsigned = self.d.long_suffix
            if dt.is_signed:
                return f"(-9223372036854775807{signed}-1{signed})" if value == -(2**63) else f"{value}{signed}"
            return f"{value}{unsigned}"
        if dt.bits == 32:
            if dt.is_signed:
                return "(-2147483647-1)" if value == -(2**31) else str(value)
            return f"{value}u"
        return f"(({self.d.register[dt]}){value})"

    def thread_id(self) -> Handle:
        return "tid"

    def program_id(self, axis: int) -> Handle:
        return f"pid{axis}"

    def num_programs(self, axis: int) -> Handle:
        return self._tmp("int", self.d.num_programs.format(axis=axis))

    # ------------------------------------------------------------ arithmetic (raw: see legalize.py)
    def binary(self, op: Op, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        if op in COMPARISON:
            return self._tmp("bool", f"({a} {_CMP[op]} {b})")
        assert isinstance(dtype, DType)
        if dtype.is_bool:  # legalize.py leaves AND/OR/XOR only
            return self._tmp("bool", f"({a} {_BITS[op]} {b})")
        t = self.d.register[dtype]
        if dtype.is_floating:
            return self._tmp(t, self._round(dtype, self._float_binary(op, a, b, dtype)))
        return self._tmp(t, self._int_binary(op, a, b, dtype))

    def _float_binary(self, op: Op, a: Handle, b: Handle, dt: DType) -> str:
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op is Op.MOD:
            return f"fmod({a}, {b})"
        if op in (Op.MAXIMUM, Op.MINIMUM):
            return f"{'fmax' if op is Op.MAXIMUM else 'fmin'}({a}, {b})"
        if op in (Op.MAXIMUM_NAN, Op.MINIMUM_NAN):
            fn = "fmax" if op is Op.MAXIMUM_NAN else "fmin"
            return f"((isnan({a}) || isnan({b})) ? ({a} + {b}) : {fn}({a}, {b}))"
        raise UnsupportedError(f"{op.value} is not defined for {dt}")

    def _int_binary(self, op: Op, a: Handle, b: Handle, dt: DType) -> str:
        t, u = self.d.register[dt], self.unsigned(dt)
        if op in (Op.ADD, Op.SUB, Op.MUL):  # in unsigned arithmetic: wraps instead of overflowing
            return f"({t})(({u}){a} {_ARITH[op]} ({u}){b})"
        if op in _BITS:
            return f"({t})({a} {_BITS[op]} {b})"
        # UMULHI is unsigned on every type (Triton's tt.mulhiui): the high half of the bits' product
        umulhi = "({t})" + self.d.mul_hi.format(a="({u}){a}", b="({u}){b}")
        simple = {Op.MAXIMUM: self.d.int_max, Op.MINIMUM: self.d.int_min, Op.UMULHI: umulhi,
                  Op.IDIV: "({t})({a} / {b})", Op.MOD: "({t})({a} % {b})",
                  Op.SHL: "({t})(({u}){a} << {b})", Op.SHR: "({t})({a} >> {b})"}
        if op in simple:
            return simple[op].format(a=a, b=b, t=t, u=u)
        raise UnsupportedError(f"{op.value} is not defined for {dt}")

    def unary(self, op: Op, a: Handle, dtype: DType) -> Handle:
        if op is Op.ISNAN:
            return self._tmp("bool", f"(isnan({a}) != 0)" if dtype.is_floating else "false")
        if dtype.is_bool:  # legalize.py leaves NOT only
            return self._tmp("bool", f"(!{a})")
        t = self.d.register[dtype]
        if op is Op.NEG:
            if dtype.is_floating:
                return self._tmp(t, f"(-{a})")
            u = self.unsigned(dtype)
            return self._tmp(t, f"({t})(({u})0 - ({u}){a})")
        if op is Op.NOT:
            return self._tmp(t, f"({t})~{a}")
        if not dtype.is_floating:
            assert op is Op.ABS
            if not dtype.is_signed:
                return a
            return self._tmp(t, f"({t})({self.d.int_abs.format(a=a, u=self.unsigned(dtype))})")
        return self._tmp(t, self._round(dtype, f"{self.d.math[op]}({a})"))

    def fma(self, a: Handle, b: Handle, c: Handle, dtype: DType) -> Handle:
        t = self.d.register[dtype]
        if dtype in NARROW_FLOATS:  # fma() in float then a narrowing would round twice
            return self._tmp(t, self._round(dtype, f"tiles_fma_odd({a}, {b}, {c})"))
        if dtype.is_floating:
            return self._tmp(t, f"fma({a}, {b}, {c})")
        u = self.unsigned(dtype)
        return self._tmp(t, f"({t})(({u}){a} * ({u}){b} + ({u}){c})")

    def cast(self, a: Handle, src: DType, dst: DType, rounding: str = "rtne") -> Handle:
        t = self.d.register[dst]
        if src == dst:
            return a
        if dst.is_bool:
            return self._tmp("bool", f"({a} != 0)")
        if src.is_bool or (src.is_int and dst.is_int):
            return self._tmp(t, f"({t})({a})")
        if src.is_int:  # int -> float
            if dst in (D.float32, D.float64):
                return self._tmp(t, f"({t})({a})")
            if self.fp64:
                return self._tmp(t, self._narrow_double(f"(double)({a})", dst, "rtne"))
            return self._tmp(t, self._round(dst, f"(float)({a})"))
        if dst.is_int:
            return self._tmp(t, self.d.float_to_int.format(t=t, a=a))
        if dst == D.float64:
            return self._tmp(t, f"(double)({a})")
        if src == D.float64:
            return self._tmp(t, self._narrow_double(a, dst, rounding))
        if dst == D.float32:  # from a narrower float: already a float
            return a
        return self._tmp(t, f"tiles_round_{NARROW_FLOATS[dst]}{_cast_suffix(dst, rounding)}({a})")

    def _narrow_double(self, a: str, dst: DType, rounding: str) -> str:
        if dst == D.float32:
            return self.d.double_to_float_rtz.format(a=a) if rounding == "rtz" else f"(float)({a})"
        return f"tiles_round_{NARROW_FLOATS[dst]}_d{_cast_suffix(dst, rounding)}({a})"

    def bitcast(self, a: Handle, src: ScalarType, dst: ScalarType) -> Handle:
        if isinstance(dst, PointerType):
            return self._tmp(self.ptr_type(dst), f"({self.ptr_type(dst)})({a})")
        assert isinstance(src, DType)
        t = self.d.register[dst]
        if src.bits >= 32:
            return self._tmp(t, self.d.reinterpret.format(t=t, a=a))
        if src in NARROW_FLOATS:
            bits = f"tiles_{NARROW_FLOATS[src]}_bits({a})"
            if dst in NARROW_FLOATS:
                return self._tmp(t, f"tiles_{NARROW_FLOATS[dst]}_from_bits({bits})")
            return self._tmp(t, f"({t}){bits}")
        if dst in NARROW_FLOATS:
            return self._tmp(t, f"tiles_{NARROW_FLOATS[dst]}_from_bits(({self.d.unsigned[dst.bits]})({a}))")
        return self._tmp(t, f"({t})({a})")

    def select(self, c: Handle, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        return self._tmp(self.reg(dtype), f"({c} ? {a} : {b})")

    def ptr_offset(self, p: Handle, offset: Handle, ptr: PointerType, offset_dtype: DType) -> Handle:
        return self._tmp(self.ptr_type(ptr), f"({p} + {offset})")

    def ptr_to_int(self, p: Handle, ptr: PointerType) -> Handle:
        return self._tmp(self.d.register[D.int64], f"({self.d.register[D.int64]})({p})")

    def int_to_ptr(self, a: Handle, ptr: PointerType) -> Handle:
        return self._tmp(self.ptr_type(ptr), f"({self.ptr_type(ptr)})({a})")

    # ------------------------------------------------------------ control flow
    def for_range(self, lb: Handle, ub: Handle, step: Handle, iv_dtype: DType, carried: Carried,
                  body: Callable[[Handle, list[Handle]], list[Handle]], unroll: int | None = None) -> list[Handle]:
        names = [self._tmp(self.reg(dt), h) for h, dt in carried]
        iv = f"i{self.count}"
        self.count += 1
        if is_literal(step):
            cond = f"{iv} {'>' if step.startswith('-') else '<'} {ub}"
        else:
            cond = f"({step} > 0 ? {iv} < {ub} : {iv} > {ub})"
        if unroll is not None:
            self._line(f"#pragma unroll {unroll}")
        self._line(f"for ({self.d.register[iv_dtype]} {iv} = {lb}; {cond}; {iv} += {step}) {{")
        self.indent += 1
        before = self.barriers
        with self._loop_body():
            self._assign(names, body(iv, list(names)), carried)
        self.indent -= 1
        self._line("}")
        self._barrier_after_loop(before)
        return names

    def _barrier_after_loop(self, barriers_before: int) -> None:
        # pocl's work-item loops ran the code after a loop that holds barriers (and whose carried
        # values a later loop reads) once per work-item for a branch only work-item 0 takes: Liger's
        # group-norm backward added its scalar atomic 32 times (num_warps=1).  A barrier at the
        # loop's exit ends that region; the loop is uniform (it holds barriers), so all arrive.
        if self.barriers != barriers_before:
            self._barrier(self.d.barrier)

    def _assign(self, names: Sequence[str], new: Sequence[Handle], carried: Carried) -> None:
        temps = [self._tmp(self.reg(dt), h) for h, (_, dt) in zip(new, carried)]
        for n, t in zip(names, temps):
            self._line(f"{n} = {t};")

    def while_loop(self, carried: Carried, cond: Callable[[list[Handle]], Handle],
                   body: Callable[[list[Handle]], list[Handle]]) -> list[Handle]:
        # ``while (go)`` with the condition evaluated before the loop and again at the end of the
        # body, not ``for (;;) { if (!c) break; ... }``: pocl's CPU driver crashes running a kernel
        # whose loop of that form holds a barrier (docs/conformance.md)
        names = [self._tmp(self.reg(dt), h) for h, dt in carried]
        go = self._tmp("bool", cond(list(names)))
        self._line(f"while ({go}) {{")
        self.indent += 1
        before = self.barriers
        with self._loop_body():
            self._assign(names, body(list(names)), carried)
            self._line(f"{go} = {cond(list(names))};")
        self.indent -= 1
        self._line("}")
        self._barrier_after_loop(before)
        return names

    def if_else(self, cond: Handle, result_types: Sequence[ScalarType],
                then: Callable[[], list[Handle]],
                otherwise: Callable[[], list[Handle]]) -> list[Handle]:
        names = [self._decl(self.reg(dt)) for dt in result_types]
        self._open(cond)
        before = self.barriers
        for n, h in zip(names, then()):
            self._line(f"{n} = {h};")
        if self.barriers == before:
            self._otherwise()
        else:
            # A branch that holds barriers (so ``cond`` is uniform) is followed by ``barrier;
            # if (!c) {..}``, not ``else``.  Under an else, clang sinks what both branches end
            # with (a masked store) into a block they share, and pocl's work-item loops then take
            # that block's per-work-item branch as uniform: work-item 0's mask decided for the
            # whole work-group (vLLM's fused MoE).  The barrier keeps clang from rejoining them.
            self._close()
            self._barrier(self.d.barrier)
            self._open(f"!({cond})")
        for n, h in zip(names, otherwise()):
            self._line(f"{n} = {h};")
        self._close()
        return names

    def when(self, cond: Handle, body: Callable[[], None]) -> None:
        self._open(cond)
        body()
        self._close()

    def barrier(self) -> None:
        self._barrier(self.d.barrier)

    def program_barrier(self) -> None:
        self._barrier(self.d.program_barrier or self.d.barrier)

    def device_print(self, prefix: str, values: Sequence[tuple[Handle, ScalarType]]) -> None:
        fmts, args = [], []
        for h, dt in values:
            if isinstance(dt, PointerType):
                fmts.append("%p")
                args.append(f"(void*)({h})")
            elif dt.is_floating:
                fmts.append("%f")
                args.append(f"(float)({h})" if dt != D.float64 else h)
            elif dt.bits == 64:
                fmts.append("%lu" if not dt.is_signed else "%ld")
                args.append(h)
            else:
                fmts.append("%u" if dt.kind is D.Kind.UINT else "%d")
                args.append(f"(int)({h})")
        text = prefix.replace("%", "%%").replace('"', '\\"')
        self._line(f'{self.d.printf}("pid (%d, %d, %d) {text} {" ".join(fmts)}\\n", pid0, pid1, pid2'
                   f'{"".join(", " + a for a in args)});')

    def unsupported(self, what: str, loc: Loc) -> UnsupportedError:
        return UnsupportedError(f"{what} is not supported by the {self.d.name} backend", loc)


def _cast_suffix(dst: DType, rounding: str) -> str:
    """The prelude's helper of a cast: ``_rtz``; to nearest into fp8 ``_satfinite`` (infinities too)."""
    return "_rtz" if rounding == "rtz" else "_satfinite" if dst.is_fp8 else ""


def float_literal(value: float, dt: DType) -> str:
    """A C literal of ``value`` rounded to ``dt`` (hex floats; NAN and INFINITY from math.h)."""
    if dt == D.float16:
        value = float(np.float16(value))
    elif dt == D.bfloat16:
        value = float(ml_dtypes.bfloat16(value))
    elif dt in (D.float8e4nv, D.float8e5):
        value = float(narrow(np.array([value], np.float64), dt)[0])
    elif dt != D.float64:
        value = float(np.float32(value))
    suffix = "" if dt == D.float64 else "f"
    cast = "(double)" if dt == D.float64 else ""
    if math.isnan(value):
        return f"{cast}NAN"
    if math.isinf(value):
        return f"({'-' if value < 0 else ''}{cast}INFINITY)"
    return f"{value.hex()}{suffix}"
