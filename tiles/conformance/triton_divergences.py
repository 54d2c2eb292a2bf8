"""Known divergences between tiles and Triton that do not count against tiles (``--oracle triton``).

Each entry is a reasoned exception: where a case disagrees with Triton and ``applies`` holds for
what the case traced and what Triton said, the verdict is ``known`` (named) instead of
``differs``.  ``kind`` says why the disagreement is not tiles' fault:

* ``interpreter``: Triton's CPU interpreter (``TRITON_INTERPRET=1``) differs from compiled Triton
  on the GPU, which is the semantics tiles follows;
* ``undefined``: Triton leaves the result undefined (LLVM poison / undefined behaviour) and tiles
  defines it (``lowering/legalize.py``'s guards), so any answer of Triton's is acceptable;
* ``extension``: Triton rejects the program, tiles accepts it and documents what it computes.

``reproducer`` is a kernel and launch that shows the divergence on Triton's interpreter;
``conformance/tests/test_triton_oracle.py`` runs each one on both (where Triton is importable)
and checks that the divergence still shows and that ``explain`` names its entry, so an entry
that a new Triton release makes obsolete is noticed.  docs/conformance.md lists the entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

NARROW_FLOATS = ("bfloat16", "float8e4nv", "float8e5")

_ML_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


@dataclass
class Evidence:
    """What is known about one disagreement: the case id (``generated_int/program`` for a generated
    program), the ``op:dtype`` pairs it traced (``runner.op_dtypes``: ``cast.<src>:<dst>`` for a
    conversion), the kernel text, and what Triton raised or how the outputs differ."""

    case_id: str
    ops: set[str] = field(default_factory=set)
    source: str = ""
    triton_error: str = ""
    mismatch: str = ""
    inputs: list[Any] = field(default_factory=list)

    def has_op(self, op: str, dtype_prefix: str = "") -> bool:
        """An ``op`` (or ``op.<kind>``) instruction whose element type starts with ``dtype_prefix``."""
        for item in self.ops:
            name, _, dtype = item.partition(":")
            if (name == op or name.startswith(op + ".")) and dtype.startswith(dtype_prefix):
                return True
        return False

    def input_has(self, test: Callable[[np.ndarray], np.ndarray]) -> bool:
        """Some float input array has an element for which ``test`` holds (e.g. ``np.isnan``)."""
        for a in self.inputs:
            if isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype.name in _ML_FLOATS):
                with np.errstate(all="ignore"):
                    if bool(test(a.astype(np.float64)).any()):
                        return True
        return False


def converts_out_of_range(e: Evidence) -> bool:
    """The kernel converts a float to an integer type and an input holds NaN, an infinity or a value
    outside that type's range (of the narrowest such destination): the conversion's result is
    undefined in Triton.  (The value converted may be computed from the input; a heuristic.)"""
    ranges = []
    for item in e.ops:
        op, _, dst = item.partition(":")
        if op.startswith("cast.") and op.removeprefix("cast.").startswith(("float", "bfloat")) \
                and dst.startswith(("int", "uint")) and dst != "int1":
            bits = int(dst.removeprefix("u").removeprefix("int"))
            ranges.append((-1.0, 2.0 ** bits) if dst.startswith("u") else (-(2.0 ** (bits - 1)) - 1, 2.0 ** (bits - 1)))
    if not ranges:
        return False
    lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
    return e.input_has(lambda x: ~np.isfinite(x) | (x <= lo) | (x >= hi))


def _float_product_to_int_in_loop(e: Evidence) -> bool:
    """A generated loop body ``v = (v * w).to(tl.<int type>)`` (w a float) and a float -> int cast traced."""
    in_loop = re.search(r"for \w+ in range\(\w+\):\n\s+(\w+) = \(\1 \* \w+\)\.to\(tl\.u?int\d+\)", e.source)
    return bool(in_loop) and any(item.partition(":")[0].startswith(("cast.float", "cast.bfloat"))
                                 and item.partition(":")[2].startswith(("int", "uint")) for item in e.ops)


def has_narrow_float(e: Evidence) -> bool:
    """The kernel has a bfloat16 or fp8 value (loaded, computed, converted from or to)."""
    for item in e.ops:
        op, _, dtype = item.partition(":")
        if dtype in NARROW_FLOATS or op.removeprefix("cast.") in NARROW_FLOATS:
            return True
    return False


def has_signaling_nan(e: Evidence) -> bool:
    """Some float input holds a signaling NaN (all-ones exponent, quiet bit clear, payload not zero)."""
    for a in e.inputs:
        if isinstance(a, np.ndarray) and a.dtype in (np.float16, np.float32, np.float64):
            quiet_bit = 1 << (np.finfo(a.dtype).nmant - 1)
            bits = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).astype(np.uint64)
            if bool((np.isnan(a) & ((bits & np.uint64(quiet_bit)) == 0)).any()):
                return True
    return False


def _nan_reaches_a_sort(e: Evidence) -> bool:
    """A NaN can be among a sort's keys: an input holds one, a load's ``other`` is NaN, or the first
    difference has a NaN on one side (a NaN the kernel computed, sorted to another place)."""
    return (e.input_has(np.isnan) or 'float("nan")' in e.source
            or bool(re.search(r"expected [\w.]*\(nan\)|got [\w.]*\(nan\)", e.mismatch)))


def _signed_zeros_in_a_sort(e: Evidence) -> bool:
    """A float input holds both -0.0 and +0.0 (and the kernel sorts floats)."""
    for a in e.inputs:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            zeros = a[a == 0]
            if np.signbit(zeros).any() and (~np.signbit(zeros)).any():
                return True
    return False


_NAN_IGNORING = ("minimum", "maximum", "reduce.min", "reduce.max", "scan.min", "scan.max")


def _f(*values: float, dtype: Any = np.float32) -> np.ndarray:
    return np.array(values, dtype=dtype)


def _i(*values: int, dtype: Any = np.int32) -> np.ndarray:
    return np.array(values, dtype=dtype)


_LOAD = "    offs = tl.arange(0, N)\n    x = tl.load(x_ptr + offs)\n"


def _unary(body: str) -> str:
    """A kernel ``(x_ptr, o_ptr, N)`` that loads ``x`` and runs ``body``."""
    return "@tiles.jit\ndef kernel(x_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD + body


@dataclass(frozen=True)
class Repro:
    """A kernel (tiles source text, named ``kernel``) and its launch that show a divergence on
    Triton's interpreter: Triton raises an error containing ``raises``, or (``raises`` empty) its
    outputs differ from tiles' interpreter.  ``case_id`` stands for the case it was seen in."""

    kernel: str
    args: Callable[[], list[Any]]
    constexprs: dict[str, Any] = field(default_factory=dict)
    raises: str = ""
    case_id: str = "repro/case"
    grid: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class Divergence:
    name: str
    kind: str  # interpreter, undefined, extension
    reason: str
    reproducer: Repro
    applies: Callable[[Evidence], bool]


KNOWN: tuple[Divergence, ...] = (
    Divergence(
        "extension-math-on-16-bit-floats", "extension",
        "Triton's math functions (tl.exp, tl.log, tl.sqrt, tl.sin, tl.cos, tl.erf, ...) accept only "
        "float32 and float64 ('Expected dtype [fp32, fp64]', compiled Triton too: a check in "
        "triton.language's math functions); tiles also accepts float16 and bfloat16 (computed in "
        "float32, rounded once).",
        Repro(_unary("    tl.store(o_ptr + offs, tl.sqrt(x))\n"),
              lambda: [_f(1, 2, 3, 4, dtype=np.float16), _f(0, 0, 0, 0, dtype=np.float16)], {"N": 4},
              raises="Expected dtype ['fp32', 'fp64']"),
        lambda e: "Expected dtype [" in e.triton_error and "fp32" in e.triton_error),
    Divergence(
        "extension-descriptor-unaligned-strides", "extension",
        "Triton requires a tensor descriptor's strides (but the last) to be multiples of 16 bytes and its "
        "block's last dimension to span at least 16 bytes (TMA's rules; the interpreter asserts them when "
        "the descriptor is made); tiles lowers descriptors on every backend and accepts any stride.",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):\n"
              "    src = tl.make_tensor_descriptor(x_ptr, (rows, cols), (cols, 1), (BM, BN))\n"
              "    dst = tl.make_tensor_descriptor(o_ptr, (rows, cols), (cols, 1), (BM, BN))\n"
              "    dst.store([0, 0], src.load([0, 0]))\n",
              lambda: [np.arange(15, dtype=np.int32), np.zeros(15, np.int32), 5, 3], {"BM": 8, "BN": 4},
              raises="16-byte aligned"),
        lambda e: "16-byte aligned" in e.triton_error or "at least 16 bytes in the last dimension" in e.triton_error),
    Divergence(
        "undefined-guarded-integer-ops", "undefined",
        "The guards family runs `//` and `%` by 0 and MIN // -1, and shifts by negative amounts or by the "
        "bit width or more: LLVM's sdiv/srem/udiv/urem/shl/ashr/lshr make these undefined (poison) in "
        "Triton, and its interpreter gives NumPy's answers; tiles defines them (lowering/legalize.py).",
        Repro("@tiles.jit\ndef kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD +
              "    y = tl.load(y_ptr + offs)\n    tl.store(o_ptr + offs, x // y)\n",
              lambda: [_i(7, -7, -2**31, 5), _i(0, 0, -1, 2), _i(0, 0, 0, 0)], {"N": 4},
              case_id="guards/divide_by_zero_and_minus_one[int32]"),
        lambda e: e.case_id.startswith(("guards/divide_by_zero_and_minus_one", "guards/shift_out_of_range"))
        and not e.triton_error),
    Divergence(
        "undefined-int1-division-by-zero", "undefined",
        "guards/int1_arithmetic also divides one-bit values by zero (`x // y`, `x % y` with y False): "
        "undefined in Triton as for every integer type. Checked on Triton 3.9's interpreter: only those two "
        "rows of the case's output differ; +, -, *, shifts, max/min, neg, abs, fma and the reductions agree.",
        Repro("@tiles.jit\ndef kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD +
              "    y = tl.load(y_ptr + offs)\n    tl.store(o_ptr + offs, x // y)\n",
              lambda: [np.array([True, False, True, True]), np.array([False, False, True, False]),
                       np.zeros(4, bool)], {"N": 4}, case_id="guards/int1_arithmetic"),
        lambda e: e.case_id == "guards/int1_arithmetic" and not e.triton_error),
    Divergence(
        "undefined-float-to-int-out-of-range", "undefined",
        "A float -> integer conversion of NaN, an infinity or a value out of the destination's range is "
        "LLVM fptosi/fptoui poison in Triton (NumPy's cast in its interpreter); tiles saturates and maps "
        "NaN to 0. Seen in guards/float_to_every_int, and in generated programs where a loop carries an "
        "integer through tl.maximum with a float operand (the promoted float is converted back unclamped).",
        Repro(_unary("    tl.store(o_ptr + offs, x.to(tl.int32))\n"),
              lambda: [_f(np.nan, np.inf, -np.inf, 3e9), _i(0, 0, 0, 0)], {"N": 4},
              case_id="generated_float/program"),
        lambda e: not e.triton_error and converts_out_of_range(e)),
    Divergence(
        "undefined-sort-with-nan", "undefined",
        "tl.sort in Triton is a compare-and-swap network over `>`; NaN compares false with everything, so "
        "where NaNs end up (and whether the other values stay sorted around them) depends on the network, "
        "and compiled Triton runs the same network. tiles defines NaN last (first when descending) with "
        "every other value sorted. The NaN may be an input's, a masked load's `other`, or computed (an fma "
        "of infinities): a NaN on either side of the first differing element stands for those.",
        Repro(_unary("    tl.store(o_ptr + offs, tl.sort(x))\n"),
              lambda: [_f(np.nan, 3, 1, 2, 0, -1, 5, 4), _f(*[0] * 8)], {"N": 8},
              case_id="generated_float/program"),
        lambda e: not e.triton_error and e.has_op("sort", "float") and _nan_reaches_a_sort(e)),
    Divergence(
        "interpreter-atomic-xchg-float", "interpreter",
        "Triton's interpreter raises 'Unsupported data type' for tl.atomic_xchg on float32 / float64 "
        "memory; compiled Triton exchanges the 32/64-bit word.",
        Repro("@tiles.jit\ndef kernel(x_ptr, m_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD +
              "    tl.store(o_ptr + offs, tl.atomic_xchg(m_ptr + offs, x))\n",
              lambda: [_f(1, 2, 3, 4), _f(5, 6, 7, 8), _f(0, 0, 0, 0)], {"N": 4}, raises="Unsupported data type"),
        lambda e: "Unsupported data type" in e.triton_error and e.has_op("atomic.xchg", "float")),
    Divergence(
        "extension-fp16-atomics", "extension",
        "Triton rejects tl.atomic_max / atomic_min / atomic_xchg on float16 ('atomic_max does not support "
        "fp16', compiled Triton too: a check in its front end); tiles supports them (a compare-and-swap "
        "loop where the device has no such atomic: docs/porting-from-triton.md).",
        Repro("@tiles.jit\ndef kernel(x_ptr, m_ptr, N: tl.constexpr):\n" + _LOAD +
              "    tl.atomic_max(m_ptr + offs, x)\n",
              lambda: [_f(1, 2, 3, 4, dtype=np.float16), _f(0, 5, 0, 5, dtype=np.float16)], {"N": 4},
              raises="does not support fp16"),
        lambda e: "does not support fp16" in e.triton_error),
    Divergence(
        "extension-block-pointers", "extension",
        "Triton 3.9 removed tl.make_block_ptr / tl.advance ('Block pointers have been removed in favor of "
        "the tensor descriptor API'); tiles keeps them for kernels written for earlier Triton releases.",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, N: tl.constexpr):\n"
              "    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (N,), (0,))\n"
              "    tl.store(o_ptr + tl.arange(0, N), tl.load(p))\n",
              lambda: [_f(1, 2, 3, 4), _f(0, 0, 0, 0)], {"N": 4}, raises="Block pointers have been removed"),
        lambda e: "Block pointers have been removed" in e.triton_error),
    Divergence(
        "extension-tl-isnan", "extension",
        "triton.language has no isnan (Triton spells it libdevice.isnan, or x != x); tiles also offers tl.isnan.",
        Repro(_unary("    tl.store(o_ptr + offs, tl.isnan(x))\n"),
              lambda: [_f(1, np.nan, 3, 4), np.zeros(4, bool)], {"N": 4}, raises="has no attribute 'isnan'"),
        lambda e: "has no attribute 'isnan'" in e.triton_error),
    Divergence(
        "interpreter-libdevice-missing", "interpreter",
        "Triton's interpreter does not implement triton.language.extra.libdevice: its functions are stubs "
        "that give None inside an interpreted kernel (\"'NoneType' object has no attribute 'to'\" at the "
        "next use). Compiled Triton calls CUDA's libdevice (or ROCm's device library).",
        Repro("import tiles.language.extra.libdevice as libdevice\n\n\n" +
              _unary("    tl.store(o_ptr + offs, libdevice.rint(x).to(tl.float32))\n"),
              lambda: [_f(0.5, 1.5, -2.5, 3.25), _f(0, 0, 0, 0)], {"N": 4},
              raises="'NoneType' object has no attribute 'to'"),
        lambda e: "'NoneType' object has no attribute 'to'" in e.triton_error
        and any(i.startswith("math_fn.") for i in e.ops)),
    Divergence(
        "extension-argreduce-axis-none", "extension",
        "tl.argmax / tl.argmin (and max / min with return_indices) with axis=None: Triton 3.9 indexes "
        "input.shape[axis] before reducing, so it fails (compiled Triton at compile time, an AssertionError "
        "in its interpreter); tiles reduces over the flattened tile and returns the flat index.",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):\n"
              "    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])\n"
              "    tl.store(o_ptr, tl.argmax(x, axis=None))\n",
              lambda: [np.arange(32, dtype=np.int32) % 7, _i(0)], {"M": 4, "N": 8}, raises="AssertionError"),
        lambda e: "AssertionError" in e.triton_error and e.has_op("argreduce")),
    Divergence(
        "interpreter-tuple-reduce-axis-none", "interpreter",
        "tl.reduce of a tuple of 2-D tiles with axis=None fails in Triton's interpreter ('can only convert "
        "an array of size 1 to a Python scalar'); the same call on 1-D tiles, or with an axis, runs. "
        "Compiled Triton reshapes the operands to 1-D and reduces (tl.reduce's documented axis=None).",
        Repro("@tiles.jit\ndef _pick(a, ai, b, bi):\n    t = b > a\n"
              "    return tl.where(t, b, a), tl.where(t, bi, ai)\n\n\n"
              "@tiles.jit\ndef kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):\n"
              "    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]\n"
              "    _, i = tl.reduce((tl.load(x_ptr + offs), offs), None, _pick)\n"
              "    tl.store(o_ptr, i)\n",
              lambda: [np.arange(32, dtype=np.int32) % 7, _i(0)], {"M": 4, "N": 8},
              raises="can only convert an array of size 1"),
        lambda e: "can only convert an array of size 1" in e.triton_error and e.has_op("reduce")),
    Divergence(
        "interpreter-rounding-mode-conversions", "interpreter",
        "A float conversion with an explicit rounding mode (`x.to(tl.float16, fp_downcast_rounding='rtz')`) "
        "goes through a bit-manipulation routine in Triton's interpreter that turns values beyond the "
        "destination's range into NaN (round toward zero gives the largest finite value) and raises a "
        "NumPy TypeError for float64 sources; compiled Triton uses the hardware conversion (cvt.rz).",
        Repro(_unary("    tl.store(o_ptr + offs, x.to(tl.float16, fp_downcast_rounding='rtz'))\n"),
              lambda: [_f(1e5, -1e5, 1.0, 70000.0), _f(0, 0, 0, 0, dtype=np.float16)], {"N": 4},
              case_id="casts/rtz[float32->float16]"),
        lambda e: "rtz[" in e.case_id or "ufunc 'left_shift' not supported" in e.triton_error),
    Divergence(
        "interpreter-argreduce-all-nan", "interpreter",
        "tl.argmax / tl.argmin over a row that is all NaN raises in Triton's interpreter (NumPy's "
        "'All-NaN slice encountered'); compiled Triton returns an index (tiles: the first).",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD +
              "    tl.store(o_ptr, tl.argmax(x, axis=0))\n",
              lambda: [_f(np.nan, np.nan, np.nan, np.nan), _i(7)], {"N": 4}, raises="All-NaN slice"),
        lambda e: "All-NaN slice" in e.triton_error),
    Divergence(
        "extension-histogram-input-widths", "extension",
        "Triton's tl.histogram takes only 32-bit integer input ('histogram only supports 32-bit integer "
        "input', compiled Triton too); tiles takes any integer type.",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, N: tl.constexpr):\n" + _LOAD +
              "    tl.store(o_ptr + tl.arange(0, 4), tl.histogram(x, 4))\n",
              lambda: [_i(0, 1, 1, 3, dtype=np.uint8), _i(0, 0, 0, 0)], {"N": 4},
              raises="histogram only supports 32-bit integer input"),
        lambda e: "histogram only supports 32-bit integer input" in e.triton_error),
    Divergence(
        "interpreter-signaling-nan-min-max", "interpreter",
        "Triton's interpreter computes tl.minimum/tl.maximum (NaN ignored: llvm.minnum/maxnum) with NumPy's "
        "fmin/fmax, which return NaN when an operand is a signaling NaN (glibc's fminf follows IEEE 754-2008 "
        "minNum there); compiled Triton emits PTX min.f32/max.f32 (checked with triton.compile for sm_90), "
        "which return the other operand for any NaN, as tiles does.",
        Repro(_unary("    tl.store(o_ptr + offs, tl.minimum(x, 2.0))\n"),
              lambda: [np.array([0x7FA00000, 0x3F800000, 0xFF8CD21C, 0x40A00000], np.uint32).view(np.float32),
                       _f(0, 0, 0, 0)], {"N": 4}, case_id="generated_float/program"),
        lambda e: not e.triton_error and any(e.has_op(op, "float") for op in _NAN_IGNORING)
        and has_signaling_nan(e)),
    Divergence(
        "undefined-sort-with-signed-zeros", "undefined",
        "tl.sort in Triton is a compare-and-swap network: each position keeps its value or takes its "
        "partner's by `x > y`, so for a pair -0.0 / +0.0 (equal, not greater) both positions can take the "
        "same operand: one zero is duplicated and the other lost (seen on Triton 3.9's interpreter, which "
        "runs the network of triton.language.standard; compiled Triton runs the same one). tiles returns a "
        "permutation of the input (zeros in input order).",
        Repro(_unary("    tl.store(o_ptr + offs, tl.sort(x))\n"),
              lambda: [_f(3, -0.0, 1, 0.0, 2, -1, 0.0, -0.0), _f(*[0] * 8)], {"N": 8},
              case_id="reduction/sort[float32,...]"),
        lambda e: not e.triton_error and e.has_op("sort", "float") and _signed_zeros_in_a_sort(e)),
    Divergence(
        "interpreter-scalar-mask-on-a-tile", "interpreter",
        "Triton's interpreter raises 'mask has unsupported dtype' for a tile load/store whose mask is a "
        "scalar (`mask=ticket < tl.num_programs(0)`, `mask=tl.program_id(0) < 1`, as the sync generator "
        "writes); compiled Triton broadcasts it (checked with triton.compile for sm_90: the tt.store takes a "
        "tensor<4x8xi1> mask).",
        Repro(_unary("    tl.store(o_ptr + offs, x, mask=tl.program_id(0) < 1)\n"),
              lambda: [_f(1, 2, 3, 4), _f(0, 0, 0, 0)], {"N": 4}, raises="mask has unsupported dtype"),
        lambda e: "mask has unsupported dtype" in e.triton_error),
    Divergence(
        "undefined-float-to-int-of-a-computed-value", "undefined",
        "As undefined-float-to-int-out-of-range, for a value the kernel computes: generated programs "
        "multiply a loop-carried integer by a float (a tl.dot result) `trips` times and convert the product "
        "back (`v = (v * d).to(tl.uint16)`); once it leaves the type's range the conversion is LLVM poison "
        "in Triton (its interpreter wraps, as NumPy's cast), and tiles saturates. Everything the value "
        "reaches then differs (an atomic_xchg of it, its old values).",
        Repro("@tiles.jit\ndef kernel(x_ptr, o_ptr, trips, N: tl.constexpr):\n" + _LOAD +
              "    v = tl.zeros((N,), tl.uint16) + 300\n"
              "    for it in range(trips):\n        v = (v * x).to(tl.uint16)\n"
              "    tl.store(o_ptr + offs, v)\n",
              lambda: [_f(300, 1000, 1.5, 3), _i(0, 0, 0, 0, dtype=np.uint16), 2], {"N": 4},
              case_id="generated_int/program"),
        lambda e: not e.triton_error and e.case_id.startswith("generated") and _float_product_to_int_in_loop(e)),
    Divergence(
        "interpreter-narrow-float-bits", "interpreter",
        "Triton's interpreter does not model bfloat16 and fp8 values: it keeps them as their raw bit "
        "patterns (NumPy uint16 / uint8) and applies arithmetic, comparisons, reductions, dot and most "
        "conversions to those integers (bf16 x + x of 1.0 gives 1.7e38); even the conversions it decodes "
        "are not IEEE: bf16 -> fp32 flushes bf16 subnormals to 0, fp32 / fp16 -> bf16 rounds half up "
        "instead of to even, fp8e4nv NaN decodes as 480 and fp8e5 infinities as +-65536; a masked fp8 "
        "load raises 'cannot cast' and a bf16 `other=` reads NaN. Compiled Triton computes on the values "
        "(Triton's documentation lists bfloat16 as unsupported by the interpreter). So any disagreement "
        "in a kernel with a bfloat16 or fp8 value is put down to the interpreter: these kernels need "
        "compiled Triton (a GPU) as the oracle.",
        Repro(_unary("    tl.store(o_ptr + offs, x + x)\n"),
              lambda: [_f(1, 2, -3, 0.5).astype(ml_dtypes.bfloat16), _f(0, 0, 0, 0).astype(ml_dtypes.bfloat16)],
              {"N": 4}),
        has_narrow_float),
)


def explain(e: Evidence) -> Divergence | None:
    """The first known divergence that accounts for this disagreement, or None."""
    for d in KNOWN:
        if d.applies(e):
            return d
    return None
