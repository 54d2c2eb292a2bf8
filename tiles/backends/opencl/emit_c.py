"""The OpenCL C emitter: each ``Emitter`` call appends C statements; handles are
C expressions (a variable name or a literal)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ...core.mathfns import MathFunction
from ...core.ops import COMPARISON, Op
from ..base import Target
from ..lowering.emitter import Carried, Emitter, Handle
from ..lowering.legalize import Legality
from . import ctext as ct
from .emit_memory import MemoryMixin

_CMP = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_ARITH = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
_BITS = {Op.AND: "&", Op.OR: "|", Op.XOR: "^"}
_MATH = {Op.EXP: "exp", Op.EXP2: "exp2", Op.LOG: "log", Op.LOG2: "log2", Op.SQRT: "sqrt",
         Op.RSQRT: "rsqrt", Op.SIN: "sin", Op.COS: "cos", Op.ERF: "erf", Op.FLOOR: "floor",
         Op.CEIL: "ceil", Op.ABS: "fabs"}


def _is_literal(h: Handle) -> bool:
    return isinstance(h, str) and h.lstrip("-").replace("u", "").replace("L", "").replace(
        "U", "").isdigit()


class OpenCLEmitter(MemoryMixin, Emitter):
    # NVIDIA's 64-bit saturating conversions give INT64_MIN for NaN: legalize.py tests for it
    legality = Legality(float_to_int_nan_is_zero=False)

    def __init__(self, target: Target, fp64: bool) -> None:
        self.target = target
        self.fp64 = fp64
        self.lines: list[str] = []
        self.indent = 1
        self.count = 0
        self.header = ""
        self.name = ""
        self.helpers: dict[str, str] = {}  # math function -> C helper source it needs

    # ------------------------------------------------------------ text
    def _line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def _tmp(self, ctype: str, expr: str) -> str:
        self.count += 1
        name = f"v{self.count}"
        self._line(f"{ctype} {name} = {expr};")
        return name

    def _decl(self, ctype: str) -> str:
        self.count += 1
        name = f"v{self.count}"
        self._line(f"{ctype} {name};")
        return name

    def _round(self, dt: DType, expr: str) -> str:
        if dt == D.float16:
            return f"tiles_round_f16({expr})"
        if dt == D.bfloat16:
            return f"tiles_round_bf16({expr})"
        return expr

    # ------------------------------------------------------------ frame
    def begin_kernel(self, name: str, params: Sequence[tuple[str, ScalarType]],
                     threads: int) -> list[Handle]:
        self.name = f"tiles_{name}"
        decls, handles = [], []
        for i, (pname, dt) in enumerate(params):
            arg = f"a{i}_{pname}"
            if isinstance(dt, PointerType):
                decls.append(f"{ct.ptr_type(dt)} {arg}")
                handles.append(arg)
            elif dt.is_bool:
                decls.append(f"uchar {arg}")
                handles.append(f"({arg} != 0)")
            else:
                decls.append(f"{ct.reg(dt)} {arg}")
                handles.append(arg)
        self.header = (f"__kernel __attribute__((reqd_work_group_size({threads}, 1, 1)))\n"
                       f"void {self.name}({', '.join(decls) or 'void'})")
        self._line("const int tid = (int)get_local_id(0);")
        for axis in range(3):
            self._line(f"const int pid{axis} = (int)get_group_id({axis});")
        return handles

    def finish(self, local_bytes: int) -> str:
        pragmas = ["#pragma OPENCL FP_CONTRACT OFF",  # a * b + c rounds twice, as the IR says
                   "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable",
                   "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable"]
        prelude = ct.PRELUDE
        if self.fp64:
            pragmas.insert(0, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
            prelude += ct.PRELUDE_FP64
        prelude += "".join(self.helpers.values())
        body = list(self.lines)
        if local_bytes:
            body.insert(0, f"  __local uchar tiles_local[{local_bytes}] __attribute__((aligned(16)));")
        return "\n".join([*pragmas, prelude, self.header + " {", *body, "}", ""])

    # ------------------------------------------------------------ values
    def constant(self, value: bool | int | float, dtype: DType) -> Handle:
        if dtype.is_floating:
            return ct.float_literal(float(value), dtype)
        return ct.int_literal(int(value), dtype)

    def thread_id(self) -> Handle:
        return "tid"

    def program_id(self, axis: int) -> Handle:
        return f"pid{axis}"

    def num_programs(self, axis: int) -> Handle:
        return self._tmp("int", f"(int)get_num_groups({axis})")

    def binary(self, op: Op, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        if op in COMPARISON:
            return self._tmp("bool", f"({a} {_CMP[op]} {b})")
        assert isinstance(dtype, DType)
        t = ct.REGISTER[dtype]
        if dtype.is_bool:  # legalize.py left AND/OR/XOR only
            return self._tmp("bool", f"({a} {_BITS[op]} {b})")
        if dtype.is_floating:
            if op in _ARITH:
                expr = f"({a} {_ARITH[op]} {b})"
            elif op is Op.MOD:
                expr = f"fmod({a}, {b})"
            elif op in (Op.MAXIMUM, Op.MINIMUM):
                expr = f"{'fmax' if op is Op.MAXIMUM else 'fmin'}({a}, {b})"
            elif op in (Op.MAXIMUM_NAN, Op.MINIMUM_NAN):
                fn = "fmax" if op is Op.MAXIMUM_NAN else "fmin"
                expr = f"((isnan({a}) || isnan({b})) ? ({a} + {b}) : {fn}({a}, {b}))"
            else:
                raise UnsupportedError(f"{op.value} is not defined for {dtype}")
            return self._tmp(t, self._round(dtype, expr))
        return self._tmp(t, self._int_binary(op, a, b, dtype))

    def _int_binary(self, op: Op, a: Handle, b: Handle, dt: DType) -> str:
        t, u = ct.REGISTER[dt], ct.unsigned(dt)
        if op in (Op.ADD, Op.SUB, Op.MUL):
            return f"({t})(({u}){a} {_ARITH[op]} ({u}){b})"
        if op in _BITS:
            return f"({t})({a} {_BITS[op]} {b})"
        if op is Op.MAXIMUM:
            return f"max({a}, {b})"
        if op is Op.MINIMUM:
            return f"min({a}, {b})"
        if op is Op.UMULHI:
            return f"mul_hi({a}, {b})"
        # legalize.py has ruled out divisors 0 and -1 and shift amounts outside [0, bits)
        if op is Op.IDIV:
            return f"({t})({a} / {b})"
        if op is Op.MOD:
            return f"({t})({a} % {b})"
        if op is Op.SHL:
            return f"({t})(({u}){a} << {b})"
        if op is Op.SHR:
            return f"({t})({a} >> {b})"
        raise UnsupportedError(f"{op.value} is not defined for {dt}")

    def unary(self, op: Op, a: Handle, dtype: DType) -> Handle:
        t = ct.REGISTER[dtype]
        if op is Op.ISNAN:
            return self._tmp("bool", f"(isnan({a}) != 0)" if dtype.is_floating else "false")
        if dtype.is_bool:  # legalize.py left NOT only
            return self._tmp("bool", f"(!{a})")
        if op is Op.NEG:
            if dtype.is_floating:
                return self._tmp(t, f"(-{a})")
            return self._tmp(t, f"({t})(({ct.unsigned(dtype)})0 - ({ct.unsigned(dtype)}){a})")
        if op is Op.NOT:
            return self._tmp(t, f"({t})~{a}")
        if not dtype.is_floating:
            assert op is Op.ABS
            return self._tmp(t, f"({t})abs({a})" if dtype.is_signed else a)
        return self._tmp(t, self._round(dtype, f"{_MATH[op]}({a})"))

    def math_fn(self, fn: MathFunction, args: Sequence[Handle], dtypes: Sequence[DType]) -> Handle:
        d = dtypes[0]
        expr = fn.opencl_expr([str(a) for a in args], u=ct.unsigned(d) if d.is_int else "")
        if fn.opencl_f32_only and (d != D.float32 or not self.fp64):
            raise UnsupportedError(f"libdevice.{fn.name} on {d} is not supported on {self.target.backend} "
                                   "(its OpenCL version is float32 only and needs a double-capable device)")
        if fn.opencl_helper:
            self.helpers[fn.name] = fn.opencl_helper
        if not expr:
            raise UnsupportedError(f"libdevice.{fn.name} has no OpenCL C builtin and is not supported on "
                                   f"{self.target.backend}; it runs on the interpreter and CUDA")
        rt = fn.result_dtype(d)
        return self._tmp(ct.REGISTER[rt], f"({ct.REGISTER[rt]})({expr})" if rt != d else expr)

    def fma(self, a: Handle, b: Handle, c: Handle, dtype: DType) -> Handle:
        t = ct.REGISTER[dtype]
        if dtype.is_floating:
            return self._tmp(t, self._round(dtype, f"fma({a}, {b}, {c})"))
        u = ct.unsigned(dtype)
        return self._tmp(t, f"({t})(({u}){a} * ({u}){b} + ({u}){c})")

    def cast(self, a: Handle, src: DType, dst: DType, rounding: str = "rtne") -> Handle:
        t = ct.REGISTER[dst]
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
            return self._tmp(t, f"convert_{t}_sat_rtz({a})")  # NaN -> 0: legalize.py
        if dst == D.float64:
            return self._tmp(t, f"(double)({a})")
        if src == D.float64:
            return self._tmp(t, self._narrow_double(a, dst, rounding))
        if dst == D.float32:  # from a 16-bit float: already a float
            return a
        suffix = "_rtz" if rounding == "rtz" else ""
        fn = "tiles_round_f16" if dst == D.float16 else "tiles_round_bf16"
        return self._tmp(t, f"{fn}{suffix}({a})")

    def _narrow_double(self, a: str, dst: DType, rounding: str) -> str:
        suffix = "_rtz" if rounding == "rtz" else ""
        if dst == D.float32:
            return f"convert_float{suffix}({a})" if suffix else f"(float)({a})"
        fn = "tiles_round_f16_d" if dst == D.float16 else "tiles_round_bf16_d"
        return f"{fn}{suffix}({a})"

    def bitcast(self, a: Handle, src: ScalarType, dst: ScalarType) -> Handle:
        if isinstance(dst, PointerType):
            return self._tmp(ct.ptr_type(dst), f"({ct.ptr_type(dst)})({a})")
        assert isinstance(src, DType)
        t = ct.REGISTER[dst]
        if src.bits >= 32:
            return self._tmp(t, f"as_{t}({a})")
        if src in (D.float16, D.bfloat16):
            bits = f"tiles_{'f16' if src == D.float16 else 'bf16'}_bits({a})"
            if dst == D.float16:
                return self._tmp(t, f"tiles_f16_from_bits({bits})")
            if dst == D.bfloat16:
                return self._tmp(t, f"tiles_bf16_from_bits({bits})")
            return self._tmp(t, f"({t}){bits}")
        if dst == D.float16:
            return self._tmp(t, f"tiles_f16_from_bits((ushort)({a}))")
        if dst == D.bfloat16:
            return self._tmp(t, f"tiles_bf16_from_bits((ushort)({a}))")
        return self._tmp(t, f"({t})({a})")

    def select(self, c: Handle, a: Handle, b: Handle, dtype: ScalarType) -> Handle:
        return self._tmp(ct.reg(dtype), f"({c} ? {a} : {b})")

    def ptr_offset(self, p: Handle, offset: Handle, ptr: PointerType, offset_dtype: DType) -> Handle:
        return self._tmp(ct.ptr_type(ptr), f"({p} + {offset})")

    def ptr_to_int(self, p: Handle, ptr: PointerType) -> Handle:
        return self._tmp("long", f"(long)({p})")

    def int_to_ptr(self, a: Handle, ptr: PointerType) -> Handle:
        return self._tmp(ct.ptr_type(ptr), f"({ct.ptr_type(ptr)})({a})")

    # ------------------------------------------------------------ control flow
    def for_range(self, lb: Handle, ub: Handle, step: Handle, iv_dtype: DType, carried: Carried,
                  body: Callable[[Handle, list[Handle]], list[Handle]], unroll: int | None = None) -> list[Handle]:
        names = [self._tmp(ct.reg(dt), h) for h, dt in carried]
        iv = f"i{self.count}"
        self.count += 1
        if _is_literal(step):
            cond = f"{iv} {'>' if step.startswith('-') else '<'} {ub}"
        else:
            cond = f"({step} > 0 ? {iv} < {ub} : {iv} > {ub})"
        it = ct.REGISTER[iv_dtype]
        if unroll is not None:
            self._line(f"#pragma unroll {unroll}")
        self._line(f"for ({it} {iv} = {lb}; {cond}; {iv} += {step}) {{")
        self.indent += 1
        self._assign(names, body(iv, list(names)), carried)
        self.indent -= 1
        self._line("}")
        return names

    def _assign(self, names: Sequence[str], new: Sequence[Handle], carried: Carried) -> None:
        temps = [self._tmp(ct.reg(dt), h) for h, (_, dt) in zip(new, carried)]
        for n, t in zip(names, temps):
            self._line(f"{n} = {t};")

    def while_loop(self, carried: Carried, cond: Callable[[list[Handle]], Handle],
                   body: Callable[[list[Handle]], list[Handle]]) -> list[Handle]:
        names = [self._tmp(ct.reg(dt), h) for h, dt in carried]
        self._line("for (;;) {")
        self.indent += 1
        c = cond(list(names))
        self._line(f"if (!({c})) break;")
        self._assign(names, body(list(names)), carried)
        self.indent -= 1
        self._line("}")
        return names

    def if_else(self, cond: Handle, result_types: Sequence[ScalarType],
                then: Callable[[], list[Handle]],
                otherwise: Callable[[], list[Handle]]) -> list[Handle]:
        names = [self._decl(ct.reg(dt)) for dt in result_types]
        for i, branch in enumerate((then, otherwise)):
            self._line(f"if ({cond}) {{" if i == 0 else "} else {")
            self.indent += 1
            for n, h in zip(names, branch()):
                self._line(f"{n} = {h};")
            self.indent -= 1
        self._line("}")
        return names

    def when(self, cond: Handle, body: Callable[[], None]) -> None:
        self._line(f"if ({cond}) {{")
        self.indent += 1
        body()
        self.indent -= 1
        self._line("}")

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
        self._line(f'printf("pid (%d, %d, %d) {text} {" ".join(fmts)}\\n", pid0, pid1, pid2'
                   f'{"".join(", " + a for a in args)});')

    def unsupported(self, what: str, loc: Loc) -> UnsupportedError:
        return UnsupportedError(f"{what} is not supported by the OpenCL backend", loc)
