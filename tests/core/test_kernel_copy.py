"""Copying a traced kernel (the lowering works on a deep copy): the IR is fresh, the launch's
compile-time values are shared, so a @jit function given as a tl.constexpr (which holds a lock
and cannot be copied) compiles on every backend."""

import copy

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

OPENCL, OPENCL_WHY = registry.status("opencl")
CUDA, CUDA_WHY = registry.status("cuda")
BACKENDS = ["interpreter", pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason=str(OPENCL_WHY))),
            pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason=str(CUDA_WHY)))]


@tiles.jit
def _double(x):
    return x * 2


@tiles.jit
def _negate(x):
    return -x


@tiles.jit
def apply_fn(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def test_deepcopy_shares_constants_and_copies_the_body():
    kernel = apply_fn.trace(apply_fn.specialize({"x_ptr": np.zeros(4, np.float32), "out_ptr": np.zeros(4, np.float32),
                                                 "n": 3, "FN": _double, "BLOCK": 4}))
    twin = copy.deepcopy(kernel)
    assert twin.constants is kernel.constants and twin.constants["FN"] is _double
    assert twin.body is not kernel.body and len(twin.body.instrs) == len(kernel.body.instrs)
    assert [i.op for i in twin.walk()] == [i.op for i in kernel.walk()]
    assert not {id(i) for i in twin.walk()} & {id(i) for i in kernel.walk()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_function_as_constexpr_argument(backend, rng):
    n = 13
    x = rng.standard_normal(n).astype(np.float32)
    for fn, expected in ((_double, 2 * x), (_negate, -x)):
        out = np.empty_like(x)
        apply_fn[(1,)](x, out, n, FN=fn, BLOCK=16, backend=backend)
        np.testing.assert_array_equal(out, expected)
