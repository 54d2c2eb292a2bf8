"""The native launch path's IR helper (``backends/cuda/launch/capi.py``) and the vocabulary the
IR is filled from (``backends/launch_facts.py``)."""

from __future__ import annotations

import re
import struct

import pytest

from tiles.backends.cuda.launch import capi, direct_launch, hot_launch_ir, trampoline
from tiles.backends.launch_facts import Alignment, ArgKind, IntClass


def test_layout_offsets_follow_the_struct_codes():
    layout = capi.Layout((("A", "Q"), ("B", "I"), ("C", "I"), ("D", "Q"), ("E", "i")), prefix="X_")
    assert layout.struct.format == "@QIIQi" and layout.size == struct.calcsize("@QIIQi")
    assert layout.offsets == {"$X_A": 0, "$X_B": 8, "$X_C": 12, "$X_D": 16, "$X_E": 24}


def test_direct_launch_header_starts_with_the_trampolines_words():
    """``trampoline.check_context`` and ``launch_call`` read both builtins' constants."""
    names = [f"${name}" for name, _ in trampoline.DRIVER_FIELDS]
    assert [trampoline.CONSTANTS.offsets[n] for n in names] == [direct_launch.HEADER.offsets[n] for n in names]


def test_fill_expands_reads_and_refuses_unknown_names():
    text = capi.fill("  %x = read i64 from %c at $A\n  ret i64 %x\n", {"$A": 24})
    assert text == "  %x_at = getelementptr i8, ptr %c, i64 24\n  %x = load i64, ptr %x_at\n  ret i64 %x\n"
    with pytest.raises(ValueError, match=r"\$B"):
        capi.fill("  ret i64 $B\n", {"$A": 1})
    with pytest.raises(ValueError, match=r"\$A"):
        capi.table({"$A": 1}, {"$A": 2})


def test_fill_expands_items_offsets_and_raised_tests():
    text = capi.fill("  %y = read ptr from %args at [%i]\n  %z = read i32 from %y at 4\n"
                     "  br raised %z, label %bad, label %good\n", {})
    assert text == ("  %y_at = getelementptr ptr, ptr %args, i64 %i\n  %y = load ptr, ptr %y_at\n"
                    "  %z_at = getelementptr i8, ptr %y, i64 4\n  %z = load i32, ptr %z_at\n"
                    "  %z_error = call ptr @PyErr_Occurred()\n  %z_failed = icmp ne ptr %z_error, null\n"
                    "  br i1 %z_failed, label %bad, label %good\n")


def test_declarations_come_from_one_table():
    assert capi.declarations(["PyBytes_AsString", "llvm.memset.p0.i64"]) == (
        "declare ptr @PyBytes_AsString(ptr)\ndeclare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n")
    assert capi.symbols(["PyBytes_AsString", "llvm.memset.p0.i64"]) == ("PyBytes_AsString",)


def test_the_hot_launch_ir_tests_the_vocabularys_numbers():
    text = hot_launch_ir.ir()
    assert "$" not in text
    cases = re.search(r"switch i64 %kind, label %decline \[(.*?)\]", text, re.S)
    assert cases is not None
    assert [int(n) for n in re.findall(r"i64 (\d+), label", cases[1])] == [int(k) for k in ArgKind]
    shifts = dict(re.findall(r"%s(\d+) = shl i64 %b\d+, (\d+)", text))
    assert {int(k): int(v) for k, v in shifts.items()} == {int(c): int(c) for c in IntClass if c}
    for alignment in Alignment:
        assert f"icmp eq i64 %ralign2, {int(alignment)}" in text
