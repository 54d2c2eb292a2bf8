"""Packing launch arguments into the kernarg buffer, without HIP."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import rocm_ir

from tiles.backends.base import LaunchArg
from tiles.backends.rocm import toolchain
from tiles.backends.rocm.codeobject import KernelArg, KernelInfo, read_code_object
from tiles.backends.rocm.kernargs import pack_arguments
from tiles.backends.rocm.target import llvm_target
from tiles.core import dtypes
from tiles.core.dtypes import PointerType
from tiles.core.errors import LaunchError

GRID_SLOTS = ("num_programs_x", "num_programs_y", "num_programs_z")


def kernel_info(slots: list[tuple[str, int, int, str]]) -> KernelInfo:
    args = tuple(KernelArg(name, offset, size, kind) for name, offset, size, kind in slots)
    return KernelInfo("k", "k.kd", args, 256, 8, 64, 256, 16, 8, 0, 0, 0, 0, 0, False)


def fake_addresses(mapping: dict[str, int]):
    return lambda arg: mapping[arg.name]


def test_vector_add_layout_from_real_metadata(linker, code_object_version):
    t = llvm_target("gfx942", code_object_version, 256)
    code = toolchain.emit_machine_code(toolchain.optimize(rocm_ir.module(t, rocm_ir.vector_add(t)),
                                                          "gfx942"), "gfx942")
    info = read_code_object(toolchain.link(code.object, linker)).kernel("vector_add")
    x, y, out = (np.zeros(4, np.float32) for _ in range(3))
    args = [LaunchArg("x", x, True, False), LaunchArg("y", y, True, False),
            LaunchArg("out", out, True, True), LaunchArg("n", 1000, False)]
    f32 = PointerType(dtypes.float32)
    buffer = pack_arguments(info, args, [f32, f32, f32, dtypes.int32], (4, 1, 1),
                            fake_addresses({"x": 0x1000, "y": 0x2000, "out": 0x7FFF_0000_3000}))
    assert len(buffer) == 40
    assert struct.unpack("<QQQiiii", buffer) == (0x1000, 0x2000, 0x7FFF_0000_3000, 1000, 4, 1, 1)


def test_offsets_come_from_the_metadata_not_from_packing_rules():
    # A gap after the i8 (the pointer is 8-aligned) and hidden arguments the runtime fills.
    info = kernel_info([("flag", 0, 1, "by_value"), ("p", 8, 8, "global_buffer"),
                        ("h", 16, 2, "by_value"), ("a", 20, 4, "by_value"), ("d", 24, 8, "by_value")]
                       + [(g, 32 + 4 * i, 4, "by_value") for i, g in enumerate(GRID_SLOTS)]
                       + [("", 48, 4, "hidden_block_count_x"), ("", 56, 8, "hidden_hostcall_buffer")])
    args = [LaunchArg("flag", True, False), LaunchArg("p", None, True), LaunchArg("h", 1.5, False),
            LaunchArg("a", 2.5, False), LaunchArg("d", -3, False)]
    param_types = [dtypes.int1, PointerType(dtypes.int8), dtypes.float16, dtypes.float32, dtypes.int64]
    buffer = pack_arguments(info, args, param_types, (7, 8, 9), fake_addresses({"p": 0xABCDEF}))
    assert len(buffer) == 44  # explicit arguments only
    assert buffer[0] == 1 and buffer[1:8] == bytes(7)
    assert struct.unpack_from("<Q", buffer, 8)[0] == 0xABCDEF
    assert np.frombuffer(buffer[16:18], np.float16)[0] == 1.5
    assert struct.unpack_from("<fqiii", buffer, 20) == (2.5, -3, 7, 8, 9)


def test_scalar_that_does_not_fit_its_type():
    info = kernel_info([("n", 0, 4, "by_value")] + [(g, 4 + 4 * i, 4, "by_value")
                                                    for i, g in enumerate(GRID_SLOTS)])
    with pytest.raises(LaunchError, match="'n'=4294967296 is not a valid int32"):
        pack_arguments(info, [LaunchArg("n", 2**32, False)], [dtypes.int32], (1, 1, 1), fake_addresses({}))


def test_argument_count_must_match_the_code_object():
    info = kernel_info([("n", 0, 4, "by_value")])
    with pytest.raises(LaunchError, match="takes 1 explicit arguments, expected 1 plus 3"):
        pack_arguments(info, [LaunchArg("n", 1, False)], [dtypes.int32], (1, 1, 1), fake_addresses({}))
    with pytest.raises(LaunchError, match="2 arguments for 1 parameters"):
        pack_arguments(info, [LaunchArg("n", 1, False)] * 2, [dtypes.int32], (1, 1, 1), fake_addresses({}))


def test_slot_size_must_match_the_parameter_type():
    info = kernel_info([("n", 0, 8, "by_value")] + [(g, 8 + 4 * i, 4, "by_value")
                                                    for i, g in enumerate(GRID_SLOTS)])
    with pytest.raises(LaunchError, match="'n' is 4 bytes but .* slot 'n' is 8"):
        pack_arguments(info, [LaunchArg("n", 5, False)], [dtypes.int32], (1, 1, 1), fake_addresses({}))
