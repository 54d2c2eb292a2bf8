"""Constant folding, CSE and DCE keep results and shrink the IR."""

import numpy as np
import passes_kernels as K

from tiles.core.fold import common_subexpressions, constant_folding
from tiles.core.ops import Op
from tiles.core.verify import verify


def _ops(kernel):
    return [i.op for i in kernel.walk()]


def test_folding_uses_c_division_and_cse_merges_repeats():
    x = np.random.default_rng().standard_normal(16).astype(np.float32)
    specs = K.folded.specialize({"x_ptr": x, "out_ptr": x, "BLOCK": 16})
    kernel = K.folded.trace(specs)
    verify(kernel)
    ops = _ops(kernel)
    assert Op.IDIV not in ops and Op.CAST not in ops, ops
    assert ops.count(Op.MUL) == 1 and ops.count(Op.LOAD) == 1, ops
    out = np.full(16, np.nan, np.float32)
    K.folded[(1,)](x, out, BLOCK=16, backend="interpreter")
    np.testing.assert_allclose(out, 2 * (x * 6.0 - 3.0), rtol=1e-6)


def test_passes_are_idempotent():
    x = np.ones(16, np.float32)
    kernel = K.folded.trace(K.folded.specialize({"x_ptr": x, "out_ptr": x, "BLOCK": 16}))
    before = _ops(kernel)
    kernel = common_subexpressions(constant_folding(kernel))
    verify(kernel)
    assert _ops(kernel) == before
