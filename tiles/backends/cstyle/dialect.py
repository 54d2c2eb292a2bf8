"""The table a C-style dialect fills in; ``CStyleEmitter`` writes every statement from it.

Format fields: ``{name}``, ``{params}``, ``{threads}``, ``{bytes}``, ``{axis}``, ``{a}``,
``{b}``, ``{t}`` (a register type), ``{space}`` (an address-space qualifier).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType
from ...core.ops import Op

# Floats narrower than 32 bits, held in float registers and rounded after every op: the prefix
# of the helpers the prelude defines for each (tiles_round_<p>[_rtz], tiles_round_<p>_d[_rtz]
# from double, tiles_<p>_bits and tiles_<p>_from_bits between a register and memory; for fp8 also
# tiles_round_<p>_satfinite and tiles_round_<p>_d_satfinite, the casts to nearest, and no plain _d).
NARROW_FLOATS: Mapping[DType, str] = {D.float16: "f16", D.bfloat16: "bf16", D.float8e4nv: "f8e4",
                                      D.float8e5: "f8e5"}


@dataclass(frozen=True)
class CDialect:
    name: str
    # types
    register: Mapping[DType, str]  # a value in a variable (NARROW_FLOATS live in float)
    memory: Mapping[DType, str]  # an element in global memory
    local: Mapping[DType, str]  # an element in work-group local memory
    unsigned: Mapping[int, str]  # the unsigned type of each width, 8 to 64 bits
    address: str  # an unsigned integer type that holds a pointer
    long_suffix: tuple[str, str]  # 64-bit literal suffixes, signed and unsigned
    # qualifiers and the kernel frame
    global_space: str  # prefix of global pointers ("__global ")
    local_space: str  # prefix of local memory pointers
    kernel_signature: str  # {name} {params} {threads}
    local_buffer: str  # declares ``tiles_local``, {bytes} long, 16-byte aligned
    # builtins
    thread_id: str  # int: this thread in its program
    program_id: str  # int: {axis}
    num_programs: str  # int: {axis}
    barrier: str  # a statement: every thread of the program arrives; orders local memory
    # spellings of ops
    math: Mapping[Op, str]  # unary float functions (EXP -> "exp", ...)
    int_max: str = "max({a}, {b})"
    int_min: str = "min({a}, {b})"
    # {u}: the unsigned type; abs(INT_MIN) is INT_MIN (OpenCL's abs() lets LLVM assume a result >= 0)
    int_abs: str = "({a} < 0 ? ({u})0 - ({u}){a} : ({u}){a})"
    mul_hi: str = "mul_hi({a}, {b})"
    float_to_int: str = "convert_{t}_sat_rtz({a})"  # truncating, saturating
    double_to_float_rtz: str = "convert_float_rtz({a})"
    reinterpret: str = "as_{t}({a})"  # the bits of a 32/64-bit value as type {t}
    # atomics, by bit width: a call on ({pointer}, {value}); cmpxchg on ({pointer}, {cmp}, {value})
    atomic_rmw: Mapping[int, str] = field(default_factory=dict)  # "{kind}" is add/max/min/and/or/xor/xchg
    atomic_cmpxchg: Mapping[int, str] = field(default_factory=dict)
    atomic_pointer: str = "volatile {space}{t}*"
    # ``tl.debug_barrier()``: as ``barrier``, also ordering global memory ("": ``barrier`` does)
    program_barrier: str = ""
    # a statement ordering this thread's global memory accesses before and after it for every other
    # program (the fence around an atomic whose ``sem`` is not relaxed; ";" where nothing needs
    # ordering; "": none is known, so such atomics are refused)
    global_fence: str = ""
    # the text every program starts with
    pragmas: tuple[str, ...] = ()
    fp64_pragmas: tuple[str, ...] = ()
    prelude: str = ""  # defines the NARROW_FLOATS helpers: tiles_round_<p>[_rtz], tiles_<p>_bits, ..._from_bits
    fp64_prelude: str = ""  # defines tiles_round_<p>_d[_rtz] (double -> narrow float)
    printf: str = "printf"
