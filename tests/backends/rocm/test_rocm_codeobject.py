"""The msgpack decoder and the code object reader on inputs that are not what they should be."""

from __future__ import annotations

import struct
import sys

import pytest

from tiles.backends.rocm.codeobject import CodeObjectError, read_code_object
from tiles.backends.rocm.msgpack_reader import MsgpackError, unpackb


@pytest.mark.parametrize("data, expected", [
    (b"\x00", 0), (b"\x7f", 127), (b"\xff", -1), (b"\xe0", -32),
    (b"\xcc\xff", 255), (b"\xcd\x01\x00", 256), (b"\xce\x00\x01\x00\x00", 65536),
    (b"\xcf" + struct.pack(">Q", 2**63), 2**63),
    (b"\xd0\x80", -128), (b"\xd1\x80\x00", -32768), (b"\xd2\xff\xff\xff\xfe", -2),
    (b"\xd3" + struct.pack(">q", -(2**40)), -(2**40)),
    (b"\xca" + struct.pack(">f", 1.5), 1.5), (b"\xcb" + struct.pack(">d", -0.25), -0.25),
    (b"\xc0", None), (b"\xc2", False), (b"\xc3", True),
    (b"\xa3abc", "abc"), (b"\xd9\x03xyz", "xyz"), (b"\xda\x00\x01q", "q"),
    (b"\xc4\x02\x01\x02", b"\x01\x02"),
    (b"\x92\x01\xa1a", [1, "a"]), (b"\xdc\x00\x02\xc3\xc2", [True, False]),
    (b"\x82\xa1k\x01\xa1l\x90", {"k": 1, "l": []}),
    (b"\xde\x00\x01\xa5.name\xa4vadd", {".name": "vadd"}),
])
def test_msgpack_values(data, expected):
    assert unpackb(data) == expected


@pytest.mark.parametrize("data, message", [
    (b"\xa5ab", "truncated"), (b"\x01\x02", "trailing"), (b"\xc1", "unsupported"),
])
def test_msgpack_errors(data, message):
    with pytest.raises(MsgpackError, match=message):
        unpackb(data)


def test_msgpack_matches_the_reference_implementation_when_installed():
    msgpack = pytest.importorskip("msgpack", reason="msgpack is an optional cross-check")
    obj = {"amdhsa.kernels": [{".args": [{".size": 8, ".offset": 2**33}], ".f": 0.5, ".b": True}],
           "amdhsa.version": [1, 2], "neg": -70000, "s" * 40: "t" * 300}
    assert unpackb(msgpack.packb(obj)) == obj


def test_not_an_elf_file():
    with pytest.raises(CodeObjectError, match="not an ELF"):
        read_code_object(b"MZ" + b"\0" * 100)


def test_an_elf_for_another_machine_is_refused():
    with open(sys.executable, "rb") as f:
        host_binary = f.read(1 << 16)
    if host_binary[:4] != b"\x7fELF":
        pytest.skip("the Python executable is not an ELF file on this platform")
    with pytest.raises(CodeObjectError, match="expected EM_AMDGPU"):
        read_code_object(host_binary)


def test_amdgpu_elf_without_metadata_is_refused():
    header = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01\x40\x02" + b"\0" * 7,
                         3, 224, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)
    with pytest.raises(CodeObjectError, match="no AMDGPU metadata"):
        read_code_object(header)
