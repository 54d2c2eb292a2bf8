"""``lowering/carried_index.py``: loop-carried index tiles assigned under a run-time ``if`` become
expressions of carried scalars.  The rewritten IR runs on the interpreter and must give what the
original gives, with the tile read before the ``if``, after it, under it and after the loop."""

import copy

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.lowering.carried_index import carry_index_scalars
from tiles.core.ir import Kernel
from tiles.core.ops import Op
from tiles.interp.executor import interpret


@tiles.jit
def walk(x_ptr, out_ptr, end_ptr, n, period, BLOCK: tl.constexpr):
    """Every ``period`` steps (and at the first) a new block of ``x`` is chosen from a scalar the
    loop computes; each step adds the current block, read before and after the switch."""
    offs = tl.arange(0, BLOCK) + 3  # not what the rebuilt expression gives at the start
    base = tl.program_id(0) * 7
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        early = tl.load(x_ptr + offs)  # the tile as carried in
        if i % period == 0:
            base = (base * 5 + i) % 11
            offs = base * BLOCK + tl.arange(0, BLOCK)
            offs = tl.where(offs < 10 * BLOCK, offs, 0)
        acc += early + tl.load(x_ptr + offs) * 2
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)
    tl.store(end_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), offs)


def _fors(kernel: Kernel) -> list:
    return [i for i in kernel.walk() if i.op is Op.FOR]


def _run(kernel, x, n, period, block, programs):
    out = np.zeros(programs * block, np.float32)
    end = np.zeros(programs * block, np.int32)
    interpret(kernel, (programs,), [x, out, end, np.int32(n), np.int32(period)])
    return out, end


def test_rewrite_keeps_the_values(rng):
    block, programs = 16, 3
    x = rng.standard_normal(12 * block).astype(np.float32)
    ir = walk.warmup(x, x, x, 5, 2, BLOCK=block, grid=(programs,), backend="interpreter").ir
    rewritten = carry_index_scalars(copy.deepcopy(ir))
    before, after = _fors(ir)[0], _fors(rewritten)[0]
    assert len(after.operands) > len(before.operands), "the loop should carry the scalars and the flag"
    for n, period in ((0, 1), (1, 3), (7, 3), (9, 1), (6, 4)):
        want = _run(ir, x, n, period, block, programs)
        got = _run(rewritten, x, n, period, block, programs)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
