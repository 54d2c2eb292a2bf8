"""libdevice functions on CUDA: PTX for every function (checked by ptxas when present) without a
GPU; on a GPU, every function against the interpreter within its documented bound (and the
fast_* ones within what the backend declares in Target.approximate)."""

import re

import numpy as np
import pytest
from test_examples_ptx import CompileOnlyCUDA

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import toolchain
from tiles.backends.llvm import mathfn as llvm_math
from tiles.conformance.corpus import libdevice as corpus
from tiles.conformance.profiles import CI
from tiles.conformance.runner import PASSED, run_case
from tiles.core import mathfns
from tiles.core.errors import UnsupportedError
from tiles.language.extra import libdevice

CASES = corpus.cases(CI)


def _ptx(case, backend):
    with np.errstate(all="ignore"):
        return case.kernel.warmup(*case.args(), backend=backend, **case.constexprs).asm["ptx"]


@pytest.mark.skipif(toolchain.libdevice_path() is None, reason="no libdevice.10.bc (CUDA toolkit or Triton)")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_function_compiles_to_ptx(case):
    ptx = _ptx(case, CompileOnlyCUDA())
    assert not re.search(r"\.extern\s+\.func", ptx), "a libdevice call was left unresolved"
    if toolchain.ptxas_path() is not None:
        toolchain.ptxas_info(ptx, "sm_90")  # raises when ptxas rejects the PTX
    names = case.constexprs["NAMES"]
    if "fast_expf" in names:
        assert "ex2.approx" in ptx  # the fast path really is the hardware approximation
    if "trunc" in names:
        assert "cvt.rzi" in ptx     # rounding functions are single instructions, no library


class NoLibdeviceCUDA(CompileOnlyCUDA):
    name = "cuda-compile-only-no-libdevice"  # its own compile cache


def test_without_libdevice_exact_functions_still_compile(monkeypatch):
    monkeypatch.setattr(toolchain, "libdevice_path", lambda: None)
    backend = NoLibdeviceCUDA()
    for case in CASES:
        names = case.constexprs["NAMES"]
        if all(llvm_math.spelling(mathfns.FUNCTIONS[n]) for n in names):
            assert "__nv_" not in _ptx(case, backend)
        elif not any(llvm_math.spelling(mathfns.FUNCTIONS[n]) for n in names):
            with pytest.raises(UnsupportedError, match="no device math library is linked"):
                _ptx(case, backend)


cuda_ok, cuda_why = registry.status("cuda")


@pytest.mark.skipif(not cuda_ok, reason=f"no CUDA GPU: {cuda_why}")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_function_on_the_gpu_matches_the_interpreter(case):
    outcome = run_case(case, registry.get("cuda"), registry.get("interpreter"))
    assert outcome.status == PASSED, outcome.message



@tiles.jit
def dot_then_math(a, b, c, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    acc = tl.dot(tl.load(a + o[:, None] * BLOCK + o[None, :]), tl.load(b + o[:, None] * BLOCK + o[None, :]))
    r = libdevice.tanh(acc) + libdevice.pow(acc, 2.0)      # math on tensor-core fragments
    tl.store(c + o[:, None] * BLOCK + o[None, :], tl.where(libdevice.isinf(r), 0.0, r))


def _dot_inputs():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((64, 64)) / 4).astype(np.float16)
    return a, a.T.copy(), np.zeros((64, 64), np.float32)


@pytest.mark.skipif(toolchain.libdevice_path() is None, reason="no libdevice.10.bc (CUDA toolkit or Triton)")
def test_math_on_tensor_core_fragments_compiles():
    ptx = dot_then_math.warmup(*_dot_inputs(), BLOCK=64, backend=CompileOnlyCUDA()).asm["ptx"]
    assert "mma.sync" in ptx and not re.search(r"\.extern\s+\.func", ptx)
    if toolchain.ptxas_path() is not None:
        toolchain.ptxas_info(ptx, "sm_90")


@pytest.mark.skipif(not cuda_ok, reason=f"no CUDA GPU: {cuda_why}")
def test_math_on_tensor_core_fragments_on_the_gpu():
    a, b, want = _dot_inputs()
    dot_then_math[(1,)](a, b, want, BLOCK=64, backend="interpreter")
    got = np.zeros_like(want)
    dot_then_math[(1,)](a, b, got, BLOCK=64, backend="cuda")
    # the dot may sum in another order (|error| <= 64 eps sum|a||b|, about 3e-5 here); x**2 doubles
    # it relative to acc (|acc| < 10), tanh shrinks it
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
