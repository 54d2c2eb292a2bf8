"""Dead-code elimination, unused atomics, and the pipeline's TILES_CHECK verification."""

import dataclasses

import numpy as np
import pytest
from core_ir import IR, ops_of, run

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core import passes
from tiles.core.errors import CompilationError
from tiles.core.ir import Value
from tiles.core.ops import Op
from tiles.core.passes import dead_code_elimination, mark_unused_atomics, run_pipeline
from tiles.core.verify import verify


def test_dce_drops_unused_pure_work_and_keeps_effects(rng):
    ir = IR()
    x, out = ir.pointer("x", D.float32), ir.pointer("out", D.float32)
    xs = ir.load(x, 8)
    ir.emit(Op.EXP, ir.emit(Op.MUL, xs, xs))  # nobody reads it
    zero, one, three = ir.const(0, D.int32), ir.const(1, D.int32), ir.const(3, D.int32)
    ir.for_loop(zero, three, one, [xs], lambda i, acc: [ir.emit(Op.ADD, acc, acc)])  # unused, pure
    ir.store(out, xs)
    kernel = dead_code_elimination(ir.kernel())
    verify(kernel)
    ops = ops_of(kernel)
    assert Op.EXP not in ops and Op.MUL not in ops and Op.FOR not in ops, ops
    assert Op.STORE in ops and Op.LOAD in ops
    data = rng.standard_normal(8).astype(np.float32)
    got = np.zeros(8, np.float32)
    run(kernel, got, data)
    np.testing.assert_array_equal(got, data)


def test_dce_keeps_a_loop_that_stores(rng):
    ir = IR()
    out = ir.pointer("out", D.int32)
    zero, one, four = ir.const(0, D.int32), ir.const(1, D.int32), ir.const(4, D.int32)

    def body(i, _):
        ir.store(out, ir.splat(i, (8,)))
        return [i]

    ir.for_loop(zero, four, one, [zero], body)
    kernel = dead_code_elimination(ir.kernel())
    assert Op.FOR in ops_of(kernel) and Op.STORE in ops_of(kernel)
    got = np.full(8, -5, np.int32)
    run(kernel, got)
    np.testing.assert_array_equal(got, 3)


@tiles.jit
def counters(count_ptr, ticket_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(count_ptr + offs % 2, 1)  # old values unused
    tickets = tl.atomic_add(count_ptr + 2 + offs * 0, 1)  # old values stored
    tl.store(ticket_ptr + offs, tickets)


def test_unused_atomic_results_are_marked_and_used_ones_kept():
    counts, tickets = np.zeros(3, np.int32), np.zeros(8, np.int32)
    kernel = counters.trace(counters.specialize({"count_ptr": counts, "ticket_ptr": tickets, "BLOCK": 8}))
    kernel = mark_unused_atomics(kernel)
    verify(kernel)
    atomics = [i for i in kernel.walk() if i.op is Op.ATOMIC]
    assert [a.attrs.result_used for a in atomics] == [False, True]
    counters[(2,)](counts, tickets, BLOCK=8, backend="interpreter")
    np.testing.assert_array_equal(counts, [8, 8, 16])
    assert sorted(tickets.tolist()) == list(range(8, 16))  # the second program's tickets overwrite


def _breaking_pass(kernel):
    """A buggy pass: the first store now stores a value nobody defined."""
    store = next(i for i in kernel.walk() if i.op is Op.STORE)
    ghost = Value(store.operands[1].type)
    kernel.body.instrs[kernel.body.instrs.index(store)] = dataclasses.replace(
        store, operands=(store.operands[0], ghost))
    return kernel


def _copy_kernel():
    ir = IR()
    x, out = ir.pointer("x", D.float32), ir.pointer("out", D.float32)
    ir.store(out, ir.load(x, 8))
    return ir.kernel()


def test_tiles_check_verifies_after_every_pass(monkeypatch):
    monkeypatch.setattr(passes, "PIPELINE", (*passes.PIPELINE, _breaking_pass))
    monkeypatch.setenv("TILES_CHECK", "1")
    with pytest.raises(CompilationError, match="store: operand .* used before it is defined"):
        run_pipeline(_copy_kernel())
    monkeypatch.setenv("TILES_CHECK", "0")
    run_pipeline(_copy_kernel())  # unchecked: the broken IR goes through


def test_tiles_check_verifies_the_traced_input(monkeypatch):
    monkeypatch.setenv("TILES_CHECK", "1")
    broken = _breaking_pass(_copy_kernel())
    with pytest.raises(CompilationError, match="used before it is defined"):
        run_pipeline(broken)


def test_the_pipeline_keeps_results(rng, monkeypatch):
    monkeypatch.setenv("TILES_CHECK", "1")
    x = rng.standard_normal(8).astype(np.float32)
    kernel = run_pipeline(_copy_kernel())
    got = np.zeros(8, np.float32)
    run(kernel, got, x)
    np.testing.assert_array_equal(got, x)
