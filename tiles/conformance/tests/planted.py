"""The OpenCL backend with one realistic single-edit defect planted in it, per class.

Each defect swaps one named function, table or constant of the shared lowering
(``backends/lowering``), of the C-style emitter base (``backends/cstyle``) or of the OpenCL
dialect table (``opencl/emit_c.py: OPENCL``) while the backend compiles (``Planted.compile``),
so the process stays clean and the defect follows the code it names: ``TARGETS`` lists what
each one patches, to retarget when that code moves.  ``CAUGHT_BY`` (test_planted.py) says
which ci family must report it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from tiles.backends.base import CompiledKernel, Options
from tiles.backends.opencl import OpenCLBackend
from tiles.core.ir import Kernel
from tiles.core.ops import Op

Replace = Callable[[Any], Any]  # the original object -> the defective one


@contextlib.contextmanager
def patched(target: str, replace: Replace) -> Iterator[None]:
    """``target`` is ``module:Attr.path``; its value is ``replace(original)`` inside the block."""
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
    setattr(owner, attr, replace(original))
    try:
        yield
    finally:
        setattr(owner, attr, original)


class Planted(OpenCLBackend):
    target_name = ""
    name = "planted"

    @staticmethod
    def replace(original: Any) -> Any:
        raise NotImplementedError

    def compile(self, kernel: Kernel, options: Options) -> CompiledKernel:
        with patched(self.target_name, self.replace):
            return super().compile(kernel, options)


def _method(wrap: Callable[..., Any]) -> Replace:
    """A replacement method: ``wrap(original, self, *args)``."""
    def replace(original: Any) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return wrap(original, self, *args, **kwargs)
        return method
    return replace


def _int_binary_wrap(op: Op, text: Callable[[str, str, str, str], str], signed_only: bool = True) -> Replace:
    """``CStyleEmitter._int_binary`` spelling ``op`` as ``text(a, b, type, unsigned type)``."""
    def wrap(original: Any, self: Any, o: Op, a: Any, b: Any, dt: Any) -> str:
        if o is op and (dt.is_signed or not signed_only):
            return text(str(a), str(b), self.d.register[dt], self.unsigned(dt))
        return original(self, o, a, b, dt)
    return _method(wrap)


def _dialect(**fields: Callable[[Any], Any]) -> Replace:
    """The OpenCL dialect table with each named field ``f`` replaced by ``fields[f](old value)``."""
    def replace(original: Any) -> Any:
        return dataclasses.replace(original, **{k: f(getattr(original, k)) for k, f in fields.items()})
    return replace


EMITTER = "tiles.backends.cstyle.emitter:CStyleEmitter"
MEMORY = "tiles.backends.cstyle.memory:CMemory"
DIALECT = "tiles.backends.opencl.emit_c:OPENCL"  # the CDialect table OpenCLEmitter is built from
LOWER = "tiles.backends.lowering.lower"
REDUCTIONS = "tiles.backends.lowering.reductions"


# ---------------------------------------------------------------- the C base: integer ops
# legalize.py has already made divisors nonzero (and not -1) and shift amounts in range.

class SignedFloorDivision(Planted):
    """Signed ``//`` rounds toward -inf (Python) instead of toward zero (C, Triton)."""
    name = "planted-signed-floordiv"
    target_name = f"{EMITTER}._int_binary"
    replace = staticmethod(_int_binary_wrap(
        Op.IDIV, lambda a, b, t, u: f"({t})(({a} / {b}) - ((({a} % {b}) != 0) & ((({a}) < 0) != (({b}) < 0))))"))


class ModuloTakesDivisorSign(Planted):
    """Signed ``%`` takes the divisor's sign (Python) instead of the dividend's (C)."""
    name = "planted-mod-python-sign"
    target_name = f"{EMITTER}._int_binary"
    replace = staticmethod(_int_binary_wrap(Op.MOD, lambda a, b, t, u: f"({t})((({a} % {b}) + {b}) % {b})"))


class ArithmeticShiftIsLogical(Planted):
    """Signed ``>>`` shifts zeros in (a logical shift on the unsigned bits)."""
    name = "planted-shr-logical"
    target_name = f"{EMITTER}._int_binary"
    replace = staticmethod(_int_binary_wrap(Op.SHR, lambda a, b, t, u: f"({t})(({u}){a} >> {b})"))


class MulHiTruncates(Planted):
    """The dialect spells ``umulhi`` as a plain multiply: the low half of the product."""
    name = "planted-umulhi-low"
    target_name = DIALECT
    replace = staticmethod(_dialect(mul_hi=lambda _: "({a} * {b})"))


# ---------------------------------------------------------------- floats and casts

class Bf16TiesAwayFromZero(Planted):
    """float -> bfloat16 (the dialect prelude's ``tiles_round_bf16``) rounds ties away from zero."""
    name = "planted-bf16-ties-away"
    target_name = DIALECT
    replace = staticmethod(_dialect(prelude=lambda text: text.replace("u += 0x7fffu + ((u >> 16) & 1u);",
                                                                      "u += 0x8000u;")))


def _f16_rtz(text: str) -> str:
    nearest = "inline float tiles_round_f16(float x) { return tiles_f16_from_bits(tiles_f16_bits_mode(x, false)); }"
    assert nearest in text, "the prelude's tiles_round_f16 changed: update the planted defect"
    return text.replace(nearest, nearest.replace("false", "true"))


class Fp16RoundsTowardZero(Planted):
    """float -> float16 (the dialect prelude's ``tiles_round_f16``) truncates instead of rounding to
    nearest even."""
    name = "planted-fp16-rtz"
    target_name = DIALECT
    replace = staticmethod(_dialect(prelude=_f16_rtz))


class FloatToIntRounds(Planted):
    """The dialect's float -> int conversion rounds to nearest instead of truncating."""
    name = "planted-float-to-int-rounds"
    target_name = DIALECT
    replace = staticmethod(_dialect(float_to_int=lambda text: text.replace("_rtz", "_rte")))


class MaximumPropagatesNan(Planted):
    """Float ``maximum`` as ``a > b ? a : b``: a NaN operand leaks through."""
    name = "planted-max-ternary"
    target_name = f"{EMITTER}._float_binary"

    @staticmethod
    def replace(original: Any) -> Any:
        def _float_binary(self: Any, op: Op, a: Any, b: Any, dt: Any) -> str:
            if op is Op.MAXIMUM:
                return f"(({a}) > ({b}) ? ({a}) : ({b}))"
            return original(self, op, a, b, dt)
        return _float_binary


class FmaAsMulAdd(Planted):
    """``tl.fma`` as a separately rounded multiply and add."""
    name = "planted-fma-mul-add"
    target_name = f"{EMITTER}.fma"

    @staticmethod
    def replace(original: Any) -> Any:
        def fma(self: Any, a: Any, b: Any, c: Any, dtype: Any) -> Any:
            if dtype.is_floating:
                return self._tmp(self.d.register[dtype], self._round(dtype, f"(({a} * {b}) + {c})"))
            return original(self, a, b, c, dtype)
        return fma


# ---------------------------------------------------------------- memory and atomics

class LoadIgnoresOther(Planted):
    """Masked-off lanes of a scalar load read 0 instead of ``other``."""
    name = "planted-load-ignores-other"
    target_name = f"{MEMORY}.load"
    replace = staticmethod(_method(lambda original, self, p, dtype, mask, other: original(self, p, dtype, mask, None)))


class StoreIgnoresMask(Planted):
    """Scalar stores write every lane, masked or not."""
    name = "planted-store-ignores-mask"
    target_name = f"{MEMORY}.store"
    replace = staticmethod(_method(lambda original, self, p, value, dtype, mask: original(self, p, value, dtype, None)))


class AtomicAddIsLoadAddStore(Planted):
    """``atomic_add`` on integers as a plain load, add and store: concurrent updates get lost."""
    name = "planted-atomic-add-racy"
    target_name = f"{MEMORY}.atomic_rmw"

    @staticmethod
    def replace(original: Any) -> Any:
        def atomic_rmw(self: Any, kind: str, p: Any, value: Any, dtype: Any, mask: Any, loc: Any,
                       *order: Any) -> Any:
            if kind != "add" or not dtype.is_int:
                return original(self, kind, p, value, dtype, mask, loc, *order)
            t = self.d.register[dtype]
            q = f"(({self._atomic_ptr(t)})({p}))"
            old = self._tmp(t, f"({t})0")
            self._line(f"if ({mask or 'true'}) {{ {old} = *{q}; *{q} = {old} + {value}; }}")
            return old
        return atomic_rmw


# ---------------------------------------------------------------- the shared lowering

class ChunkOpIgnoresDivisibility(Planted):
    """Elementwise ops (masks included) are computed once per vector chunk even when the value
    is not known equal across the chunk: a mask ``offs < n`` with n % 4 != 0 cuts a vector wrong."""
    name = "planted-chunk-mask"
    target_name = f"{LOWER}:_zip"

    @staticmethod
    def replace(original: Any) -> Any:
        def _zip(lw: Any, instr: Any, fn: Any) -> Any:
            cols = [lw.env[v] for v in instr.operands]
            lay = lw.layout(instr.results[0])
            if lay.vec > 1 and lw.info.get(instr.results[0]) is not None:
                out: list[Any] = []
                for j in range(0, lay.per_thread, lay.vec):
                    out.extend([fn(*(c[j] for c in cols))] * lay.vec)
                return [out]
            return original(lw, instr, fn)
        return _zip


class MinReductionPropagatesNan(Planted):
    """``tl.min`` reductions combine with the NaN-propagating minimum (the reduction's op looked
    up in the wrong row)."""
    name = "planted-reduce-min-nan"
    target_name = f"{REDUCTIONS}:legal_op"

    @staticmethod
    def replace(original: Any) -> Any:
        def legal_op(op: Op, dtype: Any) -> Op:
            return original(Op.MINIMUM_NAN if op is Op.MINIMUM else op, dtype)
        return legal_op


class ArgmaxTiesTakeLastIndex(Planted):
    """argmax/argmin ties go to the larger index instead of the first (``GT`` for ``LT``)."""
    name = "planted-argmax-ties-last"
    target_name = f"{REDUCTIONS}:_arg_combine"

    @staticmethod
    def replace(original: Any) -> Any:
        def _arg_combine(lw: Any, kind: Any, vdt: Any) -> Any:
            from tiles.core import dtypes as D  # noqa: N812
            from tiles.core.kinds import ReduceKind
            e = lw.e
            better = Op.GT if kind is ReduceKind.MAX else Op.LT

            def combine(a: list, b: list) -> list:
                (va, ia), (vb, ib) = a, b
                lower = e.binary(Op.GT, ib, ia, D.int32)  # the planted edit: was Op.LT
                take = e.binary(Op.OR, e.binary(better, vb, va, vdt),
                                e.binary(Op.AND, e.binary(Op.EQ, vb, va, vdt), lower, D.int1), D.int1)
                if vdt.is_floating:
                    na, nb = e.unary(Op.ISNAN, va, vdt), e.unary(Op.ISNAN, vb, vdt)
                    both = e.binary(Op.AND, na, nb, D.int1)
                    take = e.select(na, e.select(both, lower, e.constant(True, D.int1), D.int1),
                                    e.binary(Op.AND, take, e.unary(Op.NOT, nb, D.int1), D.int1), D.int1)
                return [e.select(take, vb, va, vdt), e.select(take, ib, ia, D.int32)]
            return combine
        return _arg_combine


class ProgramIdAxisIgnored(Planted):
    """The dialect spells ``program_id(axis)`` as the group id of axis 0 whatever the axis."""
    name = "planted-program-id-axis"
    target_name = DIALECT
    replace = staticmethod(_dialect(program_id=lambda text: text.replace("{axis}", "0")))


# ---------------------------------------------------------------- a crash and a hang

class LocalMemoryAtNull(Planted):
    """Local (shared) memory addressed from a null base: the kernel crashes (SIGSEGV on pocl)."""
    name = "planted-local-null"
    target_name = f"{MEMORY}._local"

    @staticmethod
    def replace(original: Any) -> Any:
        def _local(self: Any, byte_offset: int, index: Any, dtype: Any) -> str:
            return original(self, byte_offset, index, dtype).replace("tiles_local", "((__local uchar*)0)")
        return _local


class LoopStepLost(Planted):
    """A ``for`` loop never advances its induction variable: the kernel hangs."""
    name = "planted-loop-hangs"
    target_name = f"{EMITTER}._line"

    @staticmethod
    def replace(original: Any) -> Any:
        def _line(self: Any, text: str) -> None:
            if text.startswith("for (") and " += " in text:
                text = text.rsplit(" += ", 1)[0] + " += 0) {"
            original(self, text)
        return _line


DEFECTS: tuple[type[Planted], ...] = (
    SignedFloorDivision, ModuloTakesDivisorSign, ArithmeticShiftIsLogical, MulHiTruncates,
    Bf16TiesAwayFromZero, Fp16RoundsTowardZero, FloatToIntRounds, MaximumPropagatesNan, FmaAsMulAdd,
    LoadIgnoresOther, StoreIgnoresMask, AtomicAddIsLoadAddStore, ChunkOpIgnoresDivisibility,
    MinReductionPropagatesNan, ArgmaxTiesTakeLastIndex, ProgramIdAxisIgnored, LocalMemoryAtNull, LoopStepLost,
)
TARGETS = {d.name: d.target_name for d in DEFECTS}
