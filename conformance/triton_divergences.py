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

NARROW_FLOATS = ("bfloat16", "float8e4nv", "float8e5")
# ops that move or reinterpret a narrow float's bits without computing on its value
_MOVES = {"load", "store", "broadcast", "reshape", "permute", "join", "split", "cat", "where", "hint",
          "bitcast", "gather", "desc_load", "desc_store", "const", "atomic", "atomic_cas"}
# conversions Triton's interpreter decodes: bf16 <-> fp32 / fp16, fp8 -> fp16 / fp32
_DECODED = {("bfloat16", "float32"), ("float32", "bfloat16"), ("bfloat16", "float16"), ("float16", "bfloat16"),
            ("float8e4nv", "float16"), ("float8e4nv", "float32"), ("float8e5", "float16"), ("float8e5", "float32")}


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


def computes_on_narrow_float(e: Evidence) -> bool:
    """The kernel computes on a bfloat16 / fp8 value with an op other than a move or a decoded cast."""
    for item in e.ops:
        op, _, dtype = item.partition(":")
        if op.startswith("cast."):
            src = op.removeprefix("cast.")
            if (src in NARROW_FLOATS or dtype in NARROW_FLOATS) and (src, dtype) not in _DECODED:
                return True
        elif dtype in NARROW_FLOATS and op.split(".")[0] not in _MOVES:
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
        "interpreter-narrow-float-bits", "interpreter",
        "Triton's interpreter stores bfloat16 and fp8 tensors as their raw bit patterns (NumPy uint16 / "
        "uint8) and applies arithmetic, comparisons, reductions and most conversions to those integers; "
        "it decodes only bf16 <-> fp32/fp16 and fp8 -> fp16/fp32 casts (and raises 'cannot cast' for fp8 "
        "<-> integer). Compiled Triton computes on the values. Triton's documentation lists bfloat16 "
        "arithmetic as unsupported by the interpreter.",
        "x = tl.load(x_ptr + tl.arange(0, 4)); tl.store(o_ptr + tl.arange(0, 4), x + x)\n"
        "# x = torch.tensor([1.0, 2.0, -3.0, 0.5], dtype=torch.bfloat16): compiled Triton gives "
        "[2, 4, -6, 1]; the interpreter gives [1.7e38, inf, nan, 8.5e37]",
        computes_on_narrow_float),
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
        lambda e: "16-byte aligned" in e.triton_error),
    Divergence(
        "undefined-guarded-integer-ops", "undefined",
        "The guards family runs `//` and `%` by 0 and MIN // -1, and shifts by negative amounts or by the "
        "bit width or more: LLVM's sdiv/srem/udiv/urem/shl/ashr/lshr make these undefined (poison) in "
        "Triton, and its interpreter gives NumPy's answers; tiles defines them (lowering/legalize.py).",
        "x // tl.zeros_like(x), x >> 40 (int32)",
        lambda e: e.case_id.startswith(("guards/divide_by_zero_and_minus_one", "guards/shift_out_of_range"))
        and not e.triton_error),
    Divergence(
        "undefined-float-to-int-out-of-range", "undefined",
        "A float -> integer conversion of NaN, an infinity or a value out of the destination's range is "
        "LLVM fptosi/fptoui poison in Triton (NumPy's cast in its interpreter); tiles saturates and maps "
        "NaN to 0 (docs/language.md).",
        "tl.store(o_ptr + offs, x.to(tl.int8))  # x = [nan, inf, 300.0]: tiles [0, 127, 127]",
        lambda e: e.case_id.startswith("guards/float_to_every_int") and not e.triton_error),
)


def explain(e: Evidence) -> Divergence | None:
    """The first known divergence that accounts for this disagreement, or None."""
    for d in KNOWN:
        if d.applies(e):
            return d
    return None
