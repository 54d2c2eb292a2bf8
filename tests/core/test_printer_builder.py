"""The IR's text form, and the Builder that records instructions while a kernel is traced."""

import threading

import numpy as np
import pytest
from core_ir import IR

import tiles
import tiles.language as tl
from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core.builder import Builder, current, is_tracing, tracing
from tiles.core.errors import CompilationError
from tiles.core.ir import Param, TileType
from tiles.core.ops import Op
from tiles.core.printer import format_kernel
from tiles.core.verify import verify


def _looped():
    ir = IR("printed")
    out = ir.pointer("out", D.float32)
    zero, one, n = ir.const(0, D.int32), ir.const(1, D.int32), ir.param("n", D.int32)
    acc = ir.const(0.5, D.float32, (4,))
    (total,) = [ir.for_loop(zero, n, one, [acc], lambda i, a: [ir.emit(Op.ADD, a, a)])]
    ir.store(out, total)
    return ir.kernel()


def test_printed_kernel_shows_params_ops_types_attrs_and_regions():
    kernel = _looped()
    kernel.params[0] = Param("out", kernel.params[0].value, divisibility=16)
    text = format_kernel(kernel)
    lines = text.splitlines()
    assert lines[0].startswith("kernel printed(") and "out: ptr<" in lines[0] and "(div 16)" in lines[0]
    assert "n: int32" in lines[0]
    assert sum(" = const(" in line for line in lines) == 3
    assert any("<4xfp32>" in line or "<4xfloat32>" in line for line in lines), text
    assert any("value=0.5" in line for line in lines), text
    (loop_line,) = [i for i, line in enumerate(lines) if " for(" in line or "= for(" in line]
    assert lines[loop_line + 1].strip().startswith("region 0 (")
    body = lines[loop_line + 2]
    assert " = add(" in body and len(body) - len(body.lstrip()) > len(lines[loop_line]) - len(lines[loop_line].lstrip())
    assert lines[loop_line + 3].strip().startswith("yield %")
    assert lines[-1].lstrip().startswith("store(")


def test_every_value_prints_with_its_own_name():
    text = format_kernel(_looped())
    defined = [line.split(":")[0].strip() for line in text.splitlines()[1:] if " = " in line]
    assert len(defined) == len(set(defined)), defined


def test_printing_a_traced_kernel_names_source_lines(rng):
    @tiles.jit
    def axpy(x_ptr, y_ptr, a, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, a * tl.load(x_ptr + offs) + tl.load(y_ptr + offs))

    x = rng.standard_normal(16).astype(np.float32)
    kernel = axpy.trace(axpy.specialize({"x_ptr": x, "y_ptr": x, "a": 2.0, "BLOCK": 16}))
    text = format_kernel(kernel)
    assert "# test_printer_builder.py:" in text
    assert text.count(" = load(") == 2 and "store(" in text


def test_builder_infers_types_and_refuses_bad_operands_with_a_compilation_error():
    b = Builder()
    x = b.emit1(Op.ARANGE, [], A.Arange(0, 8))
    assert x.type == TileType(D.int32, (8,))
    y = b.emit1(Op.ADD, [x, x])
    assert y.type == x.type and [i.op for i in b.block.instrs] == [Op.ARANGE, Op.ADD]
    f = b.emit1(Op.CAST, [x], A.Cast(D.float32))
    with pytest.raises(CompilationError, match="add: operands differ"):
        b.emit(Op.ADD, [x, f])
    assert len(b.block.instrs) == 3  # nothing recorded for the refused op


def test_regions_collect_their_own_instructions():
    ir = IR()
    outer_before = len(ir.builder.block.instrs)
    with ir.builder.region() as inner:
        ir.const(1, D.int8)
        ir.const(2, D.int8)
    assert len(inner.instrs) == 2 and len(ir.builder.block.instrs) == outer_before
    ir.const(3, D.int8)
    assert len(ir.builder.block.instrs) == outer_before + 1


def test_current_builder_exists_only_while_tracing_and_per_thread():
    assert not is_tracing()
    with pytest.raises(CompilationError, match="inside a @tiles.jit"):
        current()
    outer, inner = Builder(), Builder()
    seen_elsewhere = []
    with tracing(outer):
        assert current() is outer
        with tracing(inner):
            assert current() is inner
            worker = threading.Thread(target=lambda: seen_elsewhere.append(is_tracing()))
            worker.start()
            worker.join()
        assert current() is outer
    assert seen_elsewhere == [False] and not is_tracing()


def test_a_traced_kernel_verifies_and_records_where_each_op_came_from(rng):
    @tiles.jit
    def clamp_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, tl.minimum(x, 1.0))

    x = rng.standard_normal(32).astype(np.float32)
    kernel = clamp_kernel.trace(clamp_kernel.specialize({"x_ptr": x, "BLOCK": 32}))
    verify(kernel)
    (minimum,) = [i for i in kernel.walk() if i.op is Op.MINIMUM]
    assert minimum.loc.filename == __file__ and "tl.minimum(x, 1.0)" in minimum.loc.source
    assert minimum.loc.function == "clamp_kernel"
