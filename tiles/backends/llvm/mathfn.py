"""MATH_FN (core/mathfns.py) as LLVM IR.

A function with an LLVM spelling (``SPELLINGS``: rounding, copysign, ldexp, classification, bit
counting) is lowered the same way on every LLVM target: exact, no library needed.  The rest
call NVIDIA's libdevice (``libdevice.py``) when the target links it (``LLVMTarget.libdevice``);
elsewhere they are unsupported, with an error that says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.dtypes import DType
from ...core.errors import UnsupportedError
from ...core.mathfns import MathFunction
from . import libdevice
from .builder import LLVMBuilder, Reg

_SUFFIX = {"float": "f32", "double": "f64", "i32": "i32", "i64": "i64"}
_INF, _FINITE = (1 << 2) | (1 << 9), 0x1F8   # llvm.is.fpclass test masks

# function -> "llvm.<intrinsic>" (the type suffix added) or an expansion below: "fpclass:<mask>",
# "signbit", "saturating:<rounding intrinsic>", ...
SPELLINGS: dict[str, str] = {
    "logb": "logb", "ilogb": "ilogb", "ldexp": "llvm.ldexp", "scalbn": "llvm.ldexp",
    "trunc": "llvm.trunc", "round": "llvm.round", "rint": "llvm.rint", "nearbyint": "llvm.nearbyint",
    "llrint": "saturating:llvm.rint", "llround": "saturating:llvm.round",
    "copysign": "llvm.copysign", "fdim": "fdim", "nextafter": "nextafter",
    "div_rz": "div_rz", "div_rd": "div_rd", "div_ru": "div_ru", "saturatef": "saturate",
    "isinf": f"fpclass:{_INF}", "isfinited": f"fpclass:{_FINITE}", "finitef": f"fpclass:{_FINITE}",
    "signbit": "signbit",
    "clz": "llvm.ctlz", "popc": "llvm.ctpop", "ffs": "llvm.cttz", "brev": "llvm.bitreverse",
}


def spelling(fn: MathFunction) -> str:
    """``fn``'s LLVM spelling, "" when it needs a math library."""
    return SPELLINGS.get(fn.name, "")


def lower_math_fn(b: LLVMBuilder, fn: MathFunction, args: Sequence[Reg], dtypes: Sequence[DType]) -> Reg:
    d = dtypes[0]
    exact = spelling(fn)
    if exact and exact not in b.t.math_fn_avoid:
        return _generic(b, fn, exact, list(args), d)
    symbol = libdevice.symbol(fn, d.bits) if b.t.libdevice else ""
    if not symbol:
        where = b.target.backend
        raise UnsupportedError(
            f"libdevice.{fn.name} on {d} is not supported on {where}: "
            + ("no device math library is linked for this target" if not b.t.libdevice
               else "libdevice has no version for this type")
            + "; run it on the interpreter, OpenCL or CUDA, or compute it from supported ops")
    return _libdevice(b, fn, symbol, list(args), d)


def _libdevice(b: LLVMBuilder, fn: MathFunction, symbol: str, args: list[Reg], d: DType) -> Reg:
    result = fn.result
    if result in ("b", "i32") and fn.operands[0] == "f":
        raw = b._call(symbol, "i32", args)
        nonzero = b._val("i1", f"icmp ne {raw}, 0")
        if result == "b":
            return nonzero
        return raw if fn.name == "ilogb" else b._val("i32", f"zext {nonzero} to i32")
    ret = {"f": args[0].ty, "n": args[0].ty, "i32": "i32", "i64": "i64"}[result]
    return b._call(symbol, ret, args)


def _generic(b: LLVMBuilder, fn: MathFunction, spelling: str, args: list[Reg], d: DType) -> Reg:
    x = args[0]
    ty = x.ty
    sfx = _SUFFIX[ty]
    if spelling.startswith("fpclass:"):
        return b._call(f"llvm.is.fpclass.{sfx}", "i1", [x, Reg(spelling.split(":")[1], "i32")])
    if spelling == "signbit":
        ity = "i32" if ty == "float" else "i64"
        bits = b._val(ity, f"bitcast {x} to {ity}")
        neg = b._val("i1", f"icmp slt {bits}, 0")
        return b._val("i32", f"zext {neg} to i32")
    if spelling == "saturate":  # maxnum(NaN, 0) is 0; + 0.0 turns -0.0 into +0.0
        lo = b._call(f"llvm.maxnum.{sfx}", ty, [x, Reg("0.0", ty)])
        hi = b._call(f"llvm.minnum.{sfx}", ty, [lo, Reg("1.0", ty)])
        return b._val(ty, f"fadd {hi}, 0.0")
    if spelling.startswith("saturating:"):  # round, then to int64 saturating with NaN -> 0
        r = b._call(f"{spelling.split(':')[1]}.{sfx}", ty, [x])
        return b._call(f"llvm.fptosi.sat.i64.{sfx}", "i64", [r])
    if spelling == "div_rz":  # the float64 quotient, truncated to float32 (exact: see core/mathfns.py)
        wide = [b._val("double", f"fpext {a} to double") for a in args]
        q = b._val("double", f"fdiv {wide[0]}, {wide[1].name}")
        r = b._val("float", f"fptrunc {q} to float")
        back = b._val("double", f"fpext {r} to double")
        ar = b._call("llvm.fabs.f64", "double", [back])
        aq = b._call("llvm.fabs.f64", "double", [q])
        over = b._val("i1", f"fcmp ogt {ar}, {aq.name}")
        bits = b._val("i32", f"bitcast {r} to i32")
        less = b._val("i32", f"sub {bits}, 1")
        down = b._val("float", f"bitcast {less} to float")
        return b._val("float", f"select {over}, {down}, {r}")
    if spelling in ("div_rd", "div_ru"):  # the float64 quotient rounded, stepped once if on the wrong side
        wide = [b._val("double", f"fpext {a} to double") for a in args]
        q = b._val("double", f"fdiv {wide[0]}, {wide[1].name}")
        r = b._val("float", f"fptrunc {q} to float")
        back = b._val("double", f"fpext {r} to double")
        wrong = b._val("i1", f"fcmp {'olt' if spelling == 'div_ru' else 'ogt'} {back}, {q.name}")
        bits = b._val("i32", f"bitcast {r} to i32")
        negative = b._val("i1", f"icmp slt {bits}, 0")
        # one step toward +inf is +1 on a positive float's bits, -1 on a negative one's (and back for -inf);
        # a wrong -0.0 or +0.0 only ever needs the step away from zero, which these give
        toward_zero = b._val("i1", f"xor {negative}, {'true' if spelling == 'div_rd' else 'false'}")
        step = b._val("i32", f"select {toward_zero}, i32 -1, i32 1")
        moved = b._val("i32", f"add {bits}, {step.name}")
        stepped = b._val("float", f"bitcast {moved} to float")
        return b._val("float", f"select {wrong}, {stepped}, {r}")
    if spelling == "fdim":  # NaN in, NaN out; else x - y when x > y, +0 otherwise
        y = args[1]
        diff = b._val(ty, f"fsub {x}, {y.name}")
        bigger = b._val("i1", f"fcmp ogt {x}, {y.name}")
        r = b._val(ty, f"select {bigger}, {diff}, {ty} 0.0")
        nan = b._val("i1", f"fcmp uno {x}, {y.name}")
        either = b._val(ty, f"fadd {x}, {y.name}")
        return b._val(ty, f"select {nan}, {either}, {r}")
    if spelling == "nextafter":
        return nextafter(b, x, args[1])
    if spelling in ("ilogb", "logb"):
        return _exponent(b, x, sfx, spelling)
    if spelling == "llvm.ldexp":
        return b._call(f"llvm.ldexp.{sfx}.i32", ty, args)
    if spelling in ("llvm.ctlz", "llvm.cttz"):
        count = b._call(f"{spelling}.{sfx}", ty, [x, Reg("false", "i1")])
        if spelling == "llvm.cttz":  # ffs: 1 + index of the lowest set bit, 0 for 0
            one = b._val(ty, f"add {count}, 1")
            zero = b._val("i1", f"icmp eq {x}, 0")
            count = b._val(ty, f"select {zero}, {ty} 0, {one}")
        return _to_i32(b, count)
    r = b._call(f"{spelling}.{sfx}", ty, args)
    return _to_i32(b, r) if fn.result == "i32" else r


def nextafter(b: LLVMBuilder, x: Reg, y: Reg) -> Reg:
    """The neighbour of x toward y: one step of the bit pattern, the smallest subnormal (with y's
    sign) from zero, y itself when x == y, NaN when either is."""
    ty = x.ty
    ity = "i32" if ty == "float" else "i64"
    bits = b._val(ity, f"bitcast {x} to {ity}")
    up = b._val(ity, f"add {bits}, 1")
    down = b._val(ity, f"sub {bits}, 1")
    # away from zero (magnitude up) when x < y for positive x or x > y for negative x
    less = b._val("i1", f"fcmp olt {x}, {y.name}")
    positive = b._val("i1", f"icmp sge {bits}, 0")
    away = b._val("i1", f"icmp eq i1 {less.name}, {positive.name}")
    step = b._val(ity, f"select {away}, {up}, {down}")
    r = b._val(ty, f"bitcast {step} to {ty}")
    ybits = b._val(ity, f"bitcast {y} to {ity}")
    sign = b._val(ity, f"and {ybits}, {-(1 << (31 if ity == 'i32' else 63))}")
    tiny = b._val(ity, f"or {sign}, 1")
    tiny_f = b._val(ty, f"bitcast {tiny} to {ty}")
    zero = b._val("i1", f"fcmp oeq {x}, 0.0")
    r = b._val(ty, f"select {zero}, {tiny_f}, {r}")
    same = b._val("i1", f"fcmp oeq {x}, {y.name}")
    r = b._val(ty, f"select {same}, {y}, {r}")
    nan = b._val("i1", f"fcmp uno {x}, {y.name}")
    either = b._val(ty, f"fadd {x}, {y.name}")
    return b._val(ty, f"select {nan}, {either}, {r}")


def _exponent(b: LLVMBuilder, x: Reg, sfx: str, kind: str) -> Reg:
    """ilogb / logb from llvm.frexp (whose exponent is one more), with the special values of
    core/mathfns.py: ilogb(0) = ilogb(NaN) = INT_MIN, ilogb(+-inf) = INT_MAX; logb(0) = -inf,
    logb(+-inf) = +inf, logb(NaN) = NaN."""
    ty = x.ty
    pair = b._call(f"llvm.frexp.{sfx}.i32", f"{{ {ty}, i32 }}", [x])
    e = b._val("i32", f"extractvalue {pair}, 1")
    e = b._val("i32", f"sub {e}, 1")
    inf = b._call(f"llvm.is.fpclass.{sfx}", "i1", [x, Reg(str((1 << 2) | (1 << 9)), "i32")])
    zero = b._val("i1", f"fcmp oeq {x}, 0.0")
    if kind == "ilogb":
        nan = b._val("i1", f"fcmp uno {x}, 0.0")
        r = b._val("i32", f"select {inf}, i32 2147483647, {e}")
        bad = b._val("i1", f"or {zero}, {nan.name}")
        return b._val("i32", f"select {bad}, i32 -2147483648, {r}")
    f = b._val(ty, f"sitofp {e} to {ty}")
    ax = b._call(f"llvm.fabs.{sfx}", ty, [x])
    f = b._val(ty, f"select {inf}, {ax}, {f}")   # +inf for +-inf; NaN stays NaN below
    nan = b._val("i1", f"fcmp uno {x}, 0.0")
    f = b._val(ty, f"select {nan}, {x}, {f}")
    return b._val(ty, f"select {zero}, {ty} 0xFFF0000000000000, {f}")


def _to_i32(b: LLVMBuilder, v: Reg) -> Reg:
    return v if v.ty == "i32" else b._val("i32", f"trunc {v} to i32")
