"""Known divergences between tiles and Triton that do not count against tiles (``--oracle triton``).

Each entry is a reasoned exception: where a case disagrees with Triton and ``applies`` holds for
what the case traced and what Triton said, the verdict is ``known`` (named) instead of
``differs``.  ``kind`` says why the disagreement is not tiles' fault:

* ``interpreter``: Triton's CPU interpreter (``TRITON_INTERPRET=1``) differs from compiled Triton
  on the GPU, which is the semantics tiles follows;
* ``undefined``: Triton leaves the result undefined (LLVM poison / undefined behaviour) and tiles
  defines it (``lowering/legalize.py``'s guards), so any answer of Triton's is acceptable;
* ``extension``: Triton rejects the program, tiles accepts it and documents what it computes.

``reproducer`` is a kernel body plus launch that shows the divergence on Triton's interpreter
(``conformance/tests/test_triton_oracle.py`` runs each one when Triton is importable, so an
entry that no longer reproduces is noticed).  docs/conformance.md lists the entries too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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


def casts_float_to_int(e: Evidence) -> bool:
    for item in e.ops:
        op, _, dst = item.partition(":")
        if op.startswith("cast.float") or op.startswith("cast.bfloat16"):
            if dst.startswith(("int", "uint")):
                return True
    return False


def has_narrow_float(e: Evidence) -> bool:
    """The kernel has a bfloat16 or fp8 value (loaded, computed, converted from or to)."""
    for item in e.ops:
        op, _, dtype = item.partition(":")
        if dtype in NARROW_FLOATS or op.removeprefix("cast.") in NARROW_FLOATS:
            return True
    return False


@dataclass(frozen=True)
class Divergence:
    name: str
    kind: str  # interpreter, undefined, extension
    reason: str
    reproducer: str
    applies: Callable[[Evidence], bool]


KNOWN: tuple[Divergence, ...] = (
    Divergence(
        "extension-math-on-16-bit-floats", "extension",
        "Triton's math functions (tl.exp, tl.log, tl.sqrt, tl.sin, tl.cos, tl.erf, ...) accept only "
        "float32 and float64 ('Expected dtype [fp32, fp64]', compiled Triton too); tiles also accepts "
        "float16 and bfloat16 (computed in float32, rounded once): docs/language.md.",
        "x = tl.load(x_ptr + tl.arange(0, 4)); tl.store(o_ptr + tl.arange(0, 4), tl.sqrt(x))\n"
        "# x float16: Triton raises ValueError: Expected dtype ['fp32', 'fp64'] but got fp16",
        lambda e: "Expected dtype ['fp32', 'fp64']" in e.triton_error),
    Divergence(
        "extension-descriptor-unaligned-strides", "extension",
        "Triton requires a tensor descriptor's strides (but the last) to be multiples of 16 bytes (TMA's "
        "rule; the interpreter asserts 'stride must be 16-byte aligned'); tiles lowers descriptors on "
        "every backend as pointer arithmetic and accepts any stride.",
        "d = tl.make_tensor_descriptor(x_ptr, (5, 3), (3, 1), (8, 4))  # int32: a 12-byte row stride",
        lambda e: "16-byte aligned" in e.triton_error or "at least 16 bytes in the last dimension" in e.triton_error),
    Divergence(
        "undefined-guarded-integer-ops", "undefined",
        "The guards family runs `//` and `%` by 0 and MIN // -1, and shifts by negative amounts or by the "
        "bit width or more: LLVM's sdiv/srem/udiv/urem/shl/ashr/lshr make these undefined (poison) in "
        "Triton, and its interpreter gives NumPy's answers; tiles defines them (lowering/legalize.py).",
        "x // tl.zeros_like(x), x >> 40 (int32)",
        lambda e: e.case_id.startswith(("guards/divide_by_zero_and_minus_one", "guards/shift_out_of_range"))
        and not e.triton_error),
    Divergence(
        "undefined-int1-division-by-zero", "undefined",
        "guards/int1_arithmetic also divides one-bit values by zero (`x // y`, `x % y` with y False): "
        "undefined in Triton as for every integer type. Checked by hand on Triton 3.9's interpreter: only "
        "those two rows of the case's output differ; +, -, *, shifts, max/min, neg, abs, fma and the "
        "reductions agree.",
        "x // y, x % y with x, y int1 and y = False: tiles gives True (x // 0 = all ones, x % 0 = x)",
        lambda e: e.case_id == "guards/int1_arithmetic" and not e.triton_error),
    Divergence(
        "undefined-float-to-int-out-of-range", "undefined",
        "A float -> integer conversion of NaN, an infinity or a value out of the destination's range is "
        "LLVM fptosi/fptoui poison in Triton (NumPy's cast in its interpreter); tiles saturates and maps "
        "NaN to 0 (docs/language.md).",
        "tl.store(o_ptr + offs, x.to(tl.int8))  # x = [nan, inf, 300.0]: tiles [0, 127, 127]",
        lambda e: not e.triton_error and (e.case_id.startswith("guards/float_to_every_int") or (
            e.case_id.endswith("/program") and casts_float_to_int(e)
            and e.input_has(lambda x: ~np.isfinite(x) | (np.abs(x) >= 2.0 ** 31))))),
    Divergence(
        "undefined-sort-with-nan", "undefined",
        "tl.sort in Triton is a compare-and-swap network over `>`; NaN compares false with everything, so "
        "where NaNs end up (and whether the other values stay sorted around them) depends on the network: "
        "compiled Triton runs the same network, so its interpreter shows the same thing. tiles defines "
        "NaN last (first when descending) with every other value sorted (docs/language.md).",
        "tl.store(o_ptr + offs, tl.sort(tl.load(x_ptr + offs)))  # x float16 with a NaN: not sorted",
        lambda e: not e.triton_error and e.has_op("sort", "float") and e.input_has(np.isnan)),
    Divergence(
        "interpreter-atomic-xchg-float", "interpreter",
        "Triton's interpreter raises 'Unsupported data type' for tl.atomic_xchg on float32/float64 "
        "memory; compiled Triton exchanges the 32/64-bit word.",
        "tl.atomic_xchg(mem_ptr + offs, x)  # float32",
        lambda e: "Unsupported data type" in e.triton_error and e.has_op("atomic.xchg", "float")),
    Divergence(
        "extension-fp16-atomics", "extension",
        "Triton rejects tl.atomic_max / atomic_min / atomic_xchg on float16 ('atomic_max does not support "
        "fp16', compiled Triton too); tiles supports them (a compare-and-swap loop where the device has no "
        "such atomic: docs/porting-from-triton.md).",
        "tl.atomic_max(mem_ptr + offs, x)  # float16",
        lambda e: "does not support fp16" in e.triton_error),
    Divergence(
        "extension-block-pointers", "extension",
        "Triton 3.9 removed tl.make_block_ptr / tl.advance ('Block pointers have been removed in favor of "
        "the tensor descriptor API'); tiles keeps them for kernels written for earlier Triton releases.",
        "p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0)); tl.load(p)",
        lambda e: "Block pointers have been removed" in e.triton_error),
    Divergence(
        "extension-tl-isnan", "extension",
        "triton.language has no isnan (Triton spells it libdevice.isnan); tiles also offers tl.isnan.",
        "tl.store(o_ptr + offs, tl.isnan(x))",
        lambda e: "has no attribute 'isnan'" in e.triton_error),
    Divergence(
        "interpreter-libdevice-missing", "interpreter",
        "Triton's interpreter implements only some libdevice functions with NumPy; the others come back "
        "as None inside the kernel (\"'NoneType' object has no attribute 'to'\"). Compiled Triton calls "
        "CUDA's libdevice.",
        "libdevice.nearbyint(x)  # among others; see the libdevice family's rows",
        lambda e: "'NoneType' object has no attribute 'to'" in e.triton_error
        and any(i.startswith("math_fn.") for i in e.ops)),
    Divergence(
        "extension-argreduce-axis-none", "extension",
        "tl.argmax / tl.argmin (and max/min with return_indices) with axis=None: Triton 3.9 indexes "
        "input.shape[axis] before reducing, so it fails (an AssertionError in its interpreter); tiles "
        "reduces over the flattened tile and returns the flat index.",
        "tl.store(o_ptr, tl.argmax(x, axis=None))  # x of shape (4, 32)",
        lambda e: "AssertionError" in e.triton_error and e.has_op("argreduce")),
    Divergence(
        "interpreter-tuple-reduce-axis-none", "interpreter",
        "tl.reduce of a tuple of 2-D tiles with axis=None fails in Triton's interpreter ('can only convert "
        "an array of size 1 to a Python scalar'); the same call on 1-D tiles, or with an axis, runs. "
        "Compiled Triton reshapes the operands to 1-D and reduces (tl.reduce's documented axis=None).",
        "_, i = tl.reduce((v, offs), None, combine)  # v, offs of shape (4, 8)",
        lambda e: "can only convert an array of size 1" in e.triton_error and e.has_op("reduce")),
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
        "x = tl.load(x_ptr + tl.arange(0, 4)); tl.store(o_ptr + tl.arange(0, 4), x + x)\n"
        "# x = torch.tensor([1.0, 2.0, -3.0, 0.5], dtype=torch.bfloat16): compiled Triton gives "
        "[2, 4, -6, 1]; the interpreter gives [1.7e38, inf, nan, 8.5e37]",
        has_narrow_float),
)


def explain(e: Evidence) -> Divergence | None:
    """The first known divergence that accounts for this disagreement, or None."""
    for d in KNOWN:
        if d.applies(e):
            return d
    return None
