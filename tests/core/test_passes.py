"""Constant folding, CSE and DCE keep results and shrink the IR."""

import numpy as np
import passes_kernels as K

from tiles.core.fold import common_subexpressions, constant_folding
from tiles.core.ops import Op
from tiles.core.verify import verify


def _ops(kernel):
    return [i.op for i in kernel.walk()]


def test_folding_uses_c_division_and_cse_merges_repeats(rng):
    x = rng.standard_normal(16).astype(np.float32)
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


def test_loop_invariants_move_out_and_results_stay(rng):
    from tiles.core.licm import hoist_loop_invariants
    x = rng.standard_normal(64).astype(np.float32)
    specs = K.loop_with_invariants.specialize({"x_ptr": x, "out_ptr": x, "n": 5, "scale": 0.5, "BLOCK": 32})
    kernel = hoist_loop_invariants(K.loop_with_invariants.trace(specs))
    verify(kernel)
    (loop,) = [i for i in kernel.body.instrs if i.op is Op.FOR]
    inside = [i.op for i in loop.regions[0].instrs]
    assert Op.LOAD in inside
    assert inside.count(Op.MUL) == 2, inside  # i * 0 and load * factor; offs * 2 and scale * 3 moved out
    out = np.full(32, np.nan, np.float32)
    K.loop_with_invariants[(1,)](x, out, 5, 0.5, BLOCK=32, backend="interpreter")
    want = np.zeros(32, np.float32)
    for i in range(5):  # the kernel's float32 steps, in its order
        want = want + (x[np.arange(32) * 2] * np.float32(1.5) + np.float32(i))
    np.testing.assert_array_equal(out, want)
