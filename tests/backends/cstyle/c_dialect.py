"""A second dialect of the C-style emitter, to show what one costs: plain C99 for the CPU,
one thread per program, compiled with the system C compiler and called through ctypes.

Everything below the ``C99`` table is the backend around it (compile, load, launch); the
dialect itself is the table, a prelude of small helpers, and no overrides.  float16 and
bfloat16 are left out (they would need the 16-bit rounding helpers in the prelude).
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tiles.backends.base import Backend, CompiledKernel, LaunchArg, Options, Stage, Target
from tiles.backends.cstyle.dialect import CDialect
from tiles.backends.cstyle.emitter import CStyleEmitter
from tiles.backends.lowering.entry import lower
from tiles.core import dtypes as D  # noqa: N812
from tiles.core.dtypes import PointerType
from tiles.core.ops import Op

_INTS = {D.int8: "int8_t", D.int16: "int16_t", D.int32: "int32_t", D.int64: "int64_t",
         D.uint8: "uint8_t", D.uint16: "uint16_t", D.uint32: "uint32_t", D.uint64: "uint64_t"}
_REGISTER = {D.int1: "bool", **_INTS, D.float32: "float", D.float64: "double"}


def _prelude() -> str:
    lines = ["#include <stdbool.h>", "#include <stdint.h>", "#include <stdio.h>", "#include <string.h>",
             "#include <math.h>",
             "static inline float tiles_rsqrt(float x) { return (float)(1.0 / sqrt((double)x)); }",
             "static inline float tiles_f32_rtz(double d) { float f = (float)d;"
             " if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f); return f; }"]
    for dt, t in _INTS.items():  # float -> int: truncate, saturate, NaN -> 0
        lo, hi = (f"{dt.min()}.0", f"{dt.max()}.0") if dt.bits < 64 else (
            ("-9223372036854775808.0", "9223372036854775808.0") if dt.is_signed else ("0.0", "18446744073709551616.0"))
        top = f"({t}){dt.max()}{'LL' if dt.is_signed else 'ULL'}" if dt.bits == 64 else f"({t}){dt.max()}"
        bottom = "INT64_MIN" if dt == D.int64 else f"({t}){dt.min()}"
        lines.append(f"static inline {t} tiles_sat_{t}(double x) {{ if (isnan(x)) return 0; x = trunc(x);"
                     f" if (x >= {hi}) return {top}; if (x <= {lo}) return {bottom}; return ({t})x; }}")
    for src in ("int32_t", "uint32_t", "float", "int64_t", "uint64_t", "double"):  # bit reinterpretation
        lines.append(f"#define tiles_as_{src}(x) ({{ __typeof__(x) tiles_in = (x); {src} tiles_out;"
                     f" memcpy(&tiles_out, &tiles_in, sizeof tiles_out); tiles_out; }})")
    combine = {"add": "o + v", "max": "o > v ? o : v", "min": "o < v ? o : v", "and": "o & v",
               "or": "o | v", "xor": "o ^ v", "xchg": "v"}
    for kind, new in combine.items():  # one thread, programs in sequence: plain read-modify-write
        new = new.replace("o", "tiles_o").replace("v", "tiles_v")
        lines.append(f"#define tiles_atomic_{kind}(p, x) ({{ __typeof__(p) tiles_q = (p);"
                     f" __typeof__(*tiles_q) tiles_o = *tiles_q, tiles_v = (x); *tiles_q = {new}; tiles_o; }})")
    lines.append("#define tiles_cmpxchg(p, c, x) ({ __typeof__(p) tiles_q = (p); __typeof__(*tiles_q) tiles_o ="
                 " *tiles_q; if (tiles_o == (c)) *tiles_q = (x); tiles_o; })")
    return "\n".join(lines) + "\n"


C99 = CDialect(
    name="C",
    register=_REGISTER, memory={**_REGISTER, D.int1: "uint8_t"}, local={**_REGISTER, D.int1: "uint8_t"},
    unsigned={8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}, address="uint64_t",
    long_suffix=("LL", "ULL"), global_space="", local_space="",
    kernel_signature="void {name}({params}, const int* tiles_pid, const int* tiles_grid)",
    local_buffer="unsigned char tiles_local[{bytes}] __attribute__((aligned(16)));",
    thread_id="0", program_id="tiles_pid[{axis}]", num_programs="tiles_grid[{axis}]",
    barrier=";",  # one thread
    global_fence=";",  # the programs run one after another: nothing to order
    math={Op.EXP: "exp", Op.EXP2: "exp2", Op.LOG: "log", Op.LOG2: "log2", Op.SQRT: "sqrt",
          Op.RSQRT: "tiles_rsqrt", Op.SIN: "sin", Op.COS: "cos", Op.ERF: "erf", Op.FLOOR: "floor",
          Op.CEIL: "ceil", Op.ABS: "fabs"},
    int_max="(({a}) > ({b}) ? ({a}) : ({b}))", int_min="(({a}) < ({b}) ? ({a}) : ({b}))",
    int_abs="({a} < 0 ? -{a} : {a})", mul_hi="tiles_no_mul_hi({a}, {b})",
    float_to_int="tiles_sat_{t}({a})", double_to_float_rtz="tiles_f32_rtz({a})",
    reinterpret="tiles_as_{t}({a})",
    atomic_rmw={32: "tiles_atomic_{kind}", 64: "tiles_atomic_{kind}"},
    atomic_cmpxchg={32: "tiles_cmpxchg", 64: "tiles_cmpxchg"}, atomic_pointer="{space}{t}*",
    prelude=_prelude(),
)

_CTYPES = {D.int1: ctypes.c_uint8, D.int8: ctypes.c_int8, D.int16: ctypes.c_int16, D.int32: ctypes.c_int32,
           D.int64: ctypes.c_int64, D.uint8: ctypes.c_uint8, D.uint16: ctypes.c_uint16,
           D.uint32: ctypes.c_uint32, D.uint64: ctypes.c_uint64, D.float32: ctypes.c_float,
           D.float64: ctypes.c_double}


class CBackend(Backend):
    """Plain C on the CPU: one thread per program, the programs of a grid in sequence."""

    name = "c-one-thread"

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tiles_c_"))

    def available(self) -> tuple[bool, str]:
        return (True, "") if shutil.which("cc") else (False, "no C compiler (cc) on PATH")

    def is_gpu(self) -> bool:
        return False

    def target(self) -> Target:
        dtypes = frozenset(_REGISTER)
        return Target("c-one-thread", arch="cc", warp_size=1, max_threads_per_block=1,
                      shared_memory=1 << 20, dtypes=dtypes, unsupported_ops=frozenset({Op.UMULHI}))

    def stages(self, options: Options) -> dict[str, Stage]:
        return {"c": lambda kernel, compiled: self._generate(compiled),
                "library": lambda source, compiled: self._build(source, compiled)}

    def _generate(self, compiled: CompiledKernel) -> str:
        emitter = CStyleEmitter(self.target(), C99, fp64=True)
        return lower(compiled.ir, emitter, Options(num_warps=1)).code

    def _build(self, source: str, compiled: CompiledKernel) -> str:
        stem = self.folder / hashlib.sha256(source.encode()).hexdigest()[:16]
        stem.with_suffix(".c").write_text(source)
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-ffp-contract=off", "-fwrapv", "-fno-strict-aliasing",
                        "-w", "-o", str(stem.with_suffix(".so")), str(stem.with_suffix(".c")), "-lm"],
                       check=True, capture_output=True, text=True)
        return str(stem.with_suffix(".so"))

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[LaunchArg]) -> None:
        fn = getattr(ctypes.CDLL(compiled.handle), f"tiles_{compiled.ir.name}")  # CStyleEmitter's name
        values: list[Any] = []
        for param, arg in zip(compiled.ir.params, args):
            dt = param.value.type.dtype
            if isinstance(dt, PointerType):  # host memory: the kernel works on the array itself
                array = arg.value
                assert isinstance(array, np.ndarray) and array.flags.c_contiguous, param.name
                values.append(ctypes.c_void_p(array.ctypes.data))
            else:
                values.append(_CTYPES[dt](bool(arg.value) if dt.is_bool else arg.value))
        pid, dims = (ctypes.c_int * 3)(), (ctypes.c_int * 3)(*grid)
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    pid[0], pid[1], pid[2] = x, y, z
                    fn(*values, pid, dims)
