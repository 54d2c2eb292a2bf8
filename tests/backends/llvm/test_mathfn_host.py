"""The LLVM spellings of math functions (llvm/mathfn.py: rounding, ldexp, classification,
ilogb/logb, saturating conversions, bit counts) run on the host CPU through llvmlite's JIT and
must equal the interpreter bit for bit.  These spellings are what ROCm (and CUDA without
libdevice) compile, and the same IR on every LLVM target, so the host checks their meaning."""

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from tiles.backends.base import Target
from tiles.backends.llvm import mathfn as llvm_math
from tiles.backends.llvm.arith import LLVMArithmetic
from tiles.backends.llvm.target import LLVMTarget
from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core import mathfns, semantics
from tiles.core.ir import TileType
from tiles.core.ops import Op

_LL = {D.float32: "float", D.float64: "double", D.int32: "i32", D.int64: "i64", D.int1: "i1"}
_C = {D.float32: ctypes.c_float, D.float64: ctypes.c_double, D.int32: ctypes.c_int32, D.int64: ctypes.c_int64}
_CASES = [(f, d) for f in mathfns.ROWS if llvm_math.spelling(f) for d in (D.float32, D.float64, D.int32, D.int64)
          if d.is_int == (f.operands[0] == "n") and not (d == D.float64 and f.f32_only)]


@pytest.fixture
def engine():
    """A fresh host target machine: each JIT engine takes ownership of its own."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine()


def _compile(engine_tm, fn, dtypes):
    host = LLVMTarget(triple=llvm.get_default_triple(), data_layout="", arch="", warp_size=1)
    b = LLVMArithmetic(Target("host"), host)
    args = _params(dtypes)
    r = b.math_fn(fn, args, dtypes)
    rt = fn.result_dtype(dtypes[0])
    ret = "i32" if rt == D.int1 else _LL[rt]
    body = list(b.blocks[b.cur])
    if rt == D.int1:
        body.append(f"  %ret = zext {r} to i32")
        r_name = "%ret"
    else:
        r_name = r.name
    params = ", ".join(f"{a}" for a in args)
    text = "\n".join([f'target triple = "{llvm.get_default_triple()}"',
                      f'target datalayout = "{engine_tm.target_data}"', *b.decls.values(),
                      f"define {ret} @f({params}) {{", "entry:", *body,
                      f"  ret {ret} {r_name}", "}"])
    module = llvm.parse_assembly(text)
    module.verify()
    ee = llvm.create_mcjit_compiler(module, engine_tm)
    ee.finalize_object()
    cret = ctypes.c_int32 if rt == D.int1 else _C[rt]
    cfn = ctypes.CFUNCTYPE(cret, *[_C[d] for d in dtypes])(ee.get_function_address("f"))
    return cfn, ee


def _params(dtypes):
    from tiles.backends.llvm.builder import Reg
    return [Reg(f"%a{i}", _LL[d]) for i, d in enumerate(dtypes)]


def _values(d, rng, n=200):
    if d.is_int:
        info = np.iinfo(d.np)
        x = rng.integers(info.min, info.max, n, dtype=d.np, endpoint=True)
        x[:6] = np.array([0, 1, -1, info.min, info.max, 1 << (d.bits - 2)], dtype=np.int64).astype(d.np)
        return x
    fi = np.finfo(d.np)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)).astype(d.np)
    x[: n // 4] = np.round(x[: n // 4] * 2) / 2  # ties for the rounding functions
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.max, -fi.max, fi.tiny, fi.smallest_subnormal,
             -fi.smallest_subnormal, 0.5, -2.5, 1e30, -1e30]
    x[-len(edges):] = np.array(edges, np.float64).astype(d.np)
    return x


@pytest.mark.parametrize("fn,dtype", _CASES, ids=[f"{f.name}-{d}" for f, d in _CASES])
def test_llvm_spelling_equals_the_interpreter(engine, fn, dtype):
    dtypes = [dtype] + ([D.int32] if fn.operands == "fi" else [dtype] if len(fn.operands) == 2 else [])
    rng = np.random.default_rng(len(fn.name) * 7 + dtype.bits)
    xs = [_values(d, rng) if d != D.int32 or dtype == D.int32 else rng.integers(-160, 160, 200).astype(np.int32)
          for d in dtypes]
    if len(xs) == 2 and fn.operands != "fi":
        xs[1] = rng.permutation(xs[1])
    cfn, _keep = _compile(engine, fn, dtypes)
    rt = fn.result_dtype(dtype)
    want = semantics.apply(Op.MATH_FN, A.MathFn(fn.name), xs, TileType(rt, (len(xs[0]),)))
    got = np.array([cfn(*(v.item() for v in vals)) for vals in zip(*xs)]).astype(rt.np)
    if rt.is_floating:
        bits = np.uint32 if rt.bits == 32 else np.uint64
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        bad = np.flatnonzero(got[~nan].view(bits) != want[~nan].view(bits))
    else:
        bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(tuple(x[~np.isnan(want)][i] if rt.is_floating else x[i] for x in xs),
                            got[~np.isnan(want)][i] if rt.is_floating else got[i],
                            want[~np.isnan(want)][i] if rt.is_floating else want[i]) for i in bad[:5]]
