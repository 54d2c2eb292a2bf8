"""The OpenCL C dialect of the C-style emitter: its table, and what a table cannot say
(float16 in memory as bit patterns converted by the prelude's helpers, vector types, the math library)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType
from ...core.errors import UnsupportedError
from ...core.mathfns import MathFunction
from ...core.ops import Op
from ..base import Target
from ..cstyle.dialect import NARROW_FLOATS, CDialect
from ..cstyle.emitter import CStyleEmitter
from ..lowering.emitter import Handle
from ..lowering.legalize import Legality
from . import ctext as ct
from . import mathfns

OPENCL = CDialect(
    name="OpenCL",
    register=ct.REGISTER, memory=ct.MEMORY, local=ct.LOCAL, unsigned=ct.UNSIGNED, address="ulong",
    long_suffix=("L", "UL"),
    global_space="__global ", local_space="__local ",
    kernel_signature="__kernel __attribute__((reqd_work_group_size({threads}, 1, 1)))\nvoid {name}({params})",
    local_buffer="__local uchar tiles_local[{bytes}] __attribute__((aligned(16)));",
    thread_id="(int)get_local_id(0)", program_id="(int)get_group_id({axis})",
    num_programs="(int)get_num_groups({axis})", barrier="barrier(CLK_LOCAL_MEM_FENCE);",
    program_barrier="barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    global_fence="mem_fence(CLK_GLOBAL_MEM_FENCE);",
    math={Op.EXP: "exp", Op.EXP2: "exp2", Op.LOG: "log", Op.LOG2: "log2", Op.SQRT: "sqrt",
          Op.RSQRT: "rsqrt", Op.SIN: "sin", Op.COS: "cos", Op.ERF: "erf", Op.FLOOR: "floor",
          Op.CEIL: "ceil", Op.ABS: "fabs"},
    atomic_rmw={32: "atomic_{kind}", 64: "atom_{kind}"},
    atomic_cmpxchg={32: "atomic_cmpxchg", 64: "atom_cmpxchg"},
    pragmas=("#pragma OPENCL FP_CONTRACT OFF",  # a * b + c rounds twice, as the IR says
             "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable",
             "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable"),
    fp64_pragmas=("#pragma OPENCL EXTENSION cl_khr_fp64 : enable",),
    prelude=ct.PRELUDE, fp64_prelude=ct.PRELUDE_FP64,
)


class OpenCLEmitter(CStyleEmitter):
    # NVIDIA's 64-bit saturating conversions give INT64_MIN for NaN: legalize.py tests for it
    legality = Legality(float_to_int_nan_is_zero=False)
    orders_global_hazards = True  # pocl runs a work-group's items one after another between barriers

    def __init__(self, target: Target, fp64: bool, tree_levels_per_barrier: int = 1,
                 recompute_budget: int = CStyleEmitter.recompute_budget, defer_exchange_barriers: bool = False,
                 global_fence: str = OPENCL.global_fence) -> None:
        super().__init__(target, dataclasses.replace(OPENCL, global_fence=global_fence), fp64)
        self.tree_levels_per_barrier = tree_levels_per_barrier
        self.recompute_budget = recompute_budget
        self.defer_exchange_barriers = defer_exchange_barriers

    def math_fn(self, fn: MathFunction, args: Sequence[Handle], dtypes: Sequence[DType]) -> Handle:
        d = dtypes[0]
        spelling = mathfns.spelling(fn)
        expr = mathfns.expr(fn, [str(a) for a in args], u=self.unsigned(d) if d.is_int else "")
        if spelling.f32_only and (d != D.float32 or not self.fp64):
            raise UnsupportedError(f"libdevice.{fn.name} on {d} is not supported on {self.target.backend} "
                                   "(its OpenCL version is float32 only and needs a double-capable device)")
        if spelling.helper:
            self.helpers[fn.name] = spelling.helper
        if not expr:
            raise UnsupportedError(f"libdevice.{fn.name} has no OpenCL C builtin and is not supported on "
                                   f"{self.target.backend}; it runs on the interpreter and CUDA")
        rt = fn.result_dtype(d)
        t = ct.REGISTER[rt]
        return self._tmp(t, f"({t})({expr})" if rt != d else expr)

    # ------------------------------------------------------------ float16 in memory (as ushort bits), vector types
    def _read(self, p: Handle, dt: DType) -> str:
        if dt == D.float16:
            return f"tiles_f16_from_bits(*(__global const ushort*)({p}))"
        return super()._read(p, dt)

    def _write(self, p: Handle, v: Handle, dt: DType) -> str:
        if dt == D.float16:
            return f"*(__global ushort*)({p}) = tiles_f16_bits({v});"
        return super()._write(p, v, dt)

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return width in (2, 4)

    def _vector(self, dtype: DType, width: int) -> str:
        return f"{ct.MEMORY[dtype]}{width}"

    def _vread(self, p: Handle, dtype: DType, width: int) -> str:
        return f"*((__global const {self._vector(dtype, width)}*)({p}))"

    def _element(self, vec: str, i: int, dtype: DType) -> str:
        part = f"{vec}.s{i}"
        if dtype in NARROW_FLOATS:
            return f"tiles_{NARROW_FLOATS[dtype]}_from_bits({part})"
        return f"({part} != 0)" if dtype.is_bool else part

    def load_vector(self, p: Handle, dtype: DType, width: int, mask: Handle | None,
                    others: Sequence[Handle] | None) -> list[Handle]:
        t = ct.REGISTER[dtype]
        if mask is None:
            vec = self._tmp(self._vector(dtype, width), self._vread(p, dtype, width))
            return [self._tmp(t, self._element(vec, i, dtype)) for i in range(width)]
        outs = [self._decl(t) for _ in range(width)]
        self._line(f"if ({mask}) {{")
        vec = self._tmp(self._vector(dtype, width), self._vread(p, dtype, width))
        for i, o in enumerate(outs):
            self._line(f"  {o} = {self._element(vec, i, dtype)};")
        self._line("} else {")
        for i, o in enumerate(outs):
            self._line(f"  {o} = {others[i] if others else self._zero(dtype)};")
        self._line("}")
        return outs

    def store_vector(self, p: Handle, values: Sequence[Handle], dtype: DType, mask: Handle | None) -> None:
        w = len(values)
        vt = self._vector(dtype, w)
        if dtype in NARROW_FLOATS:
            parts = [f"tiles_{NARROW_FLOATS[dtype]}_bits({v})" for v in values]
        elif dtype.is_bool:
            parts = [f"(uchar)({v})" for v in values]
        else:
            parts = list(values)
        stmt = f"*((__global {vt}*)({p})) = ({vt})({', '.join(parts)});"
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")
