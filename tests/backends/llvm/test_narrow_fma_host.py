"""The LLVM backends' float16/bfloat16 ``fma`` (``llvm/arith.py``: a float sum rounded to odd,
then narrowed) run on the host CPU through llvmlite's JIT: narrowing its result must give the
interpreter's single rounding of the exact ``x * y + z`` bit for bit, on operands whose product
lies on a midpoint of the narrow type (where a float fma then a narrowing rounds twice)."""

import ctypes
import sys
from pathlib import Path

import llvmlite.binding as llvm
import ml_dtypes
import numpy as np
import pytest

from tiles.backends.base import Target
from tiles.backends.llvm.arith import LLVMArithmetic
from tiles.backends.llvm.builder import Reg
from tiles.backends.llvm.target import LLVMTarget
from tiles.core import dtypes as D
from tiles.core import floats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "language"))
from test_narrow_fma import midpoint_operands  # noqa: E402


def _round_odd_fma():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    b = LLVMArithmetic(Target("host"), LLVMTarget(triple=llvm.get_default_triple(), data_layout="", arch="",
                                                  warp_size=1))
    args = [Reg(f"%a{i}", "float") for i in range(3)]
    r = b._fma_round_odd(*args)
    text = "\n".join([f'target triple = "{llvm.get_default_triple()}"', f'target datalayout = "{tm.target_data}"',
                      "define float @f(float %a0, float %a1, float %a2) {", "entry:", *b.blocks[b.cur],
                      f"  ret float {r.name}", "}"])
    module = llvm.parse_assembly(text)
    module.verify()
    ee = llvm.create_mcjit_compiler(module, tm)
    ee.finalize_object()
    f = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_float)(ee.get_function_address("f"))
    return f, ee


@pytest.mark.parametrize("dtype", [D.float16, D.bfloat16])
def test_round_odd_sum_narrows_to_the_single_rounding(rng, dtype):
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == D.bfloat16 else np.dtype(np.float16)
    x, y, z = midpoint_operands(rng, np_dtype, n=200)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0], np_dtype)
    x, y, z = (np.concatenate([v, special, special[::-1]]) for v in (x, y, z))
    f, _engine = _round_odd_fma()
    got = np.array([f(float(a), float(b), float(c)) for a, b, c in zip(x, y, z)], np.float32).astype(np_dtype)
    want = np.asarray(floats.fma(x, y, z, dtype), np_dtype)
    nan = np.isnan(want.astype(np.float32))
    assert (np.isnan(got.astype(np.float32)) == nan).all()
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
