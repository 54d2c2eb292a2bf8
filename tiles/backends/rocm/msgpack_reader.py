"""A MessagePack decoder: just enough to read the AMDGPU metadata note of a code object.

The note (``NT_AMDGPU_METADATA``) is one msgpack map; see the "Code Object V3+ Metadata"
section of LLVM's AMDGPUUsage.  Decoding is all we need, so this avoids a dependency.
"""

from __future__ import annotations

import struct
from typing import Any


class MsgpackError(ValueError):
    pass


# Fixed-width payloads: first byte -> (struct format, byte count).
_FIXED = {
    0xCA: (">f", 4), 0xCB: (">d", 8),
    0xCC: (">B", 1), 0xCD: (">H", 2), 0xCE: (">I", 4), 0xCF: (">Q", 8),
    0xD0: (">b", 1), 0xD1: (">h", 2), 0xD2: (">i", 4), 0xD3: (">q", 8),
}
# Length-prefixed strings and byte strings: first byte -> (length format, size, is text).
_SIZED = {
    0xC4: (">B", 1, False), 0xC5: (">H", 2, False), 0xC6: (">I", 4, False),
    0xD9: (">B", 1, True), 0xDA: (">H", 2, True), 0xDB: (">I", 4, True),
}
# Containers with a length prefix: first byte -> (length format, size, is map).
_CONTAINERS = {0xDC: (">H", 2, False), 0xDD: (">I", 4, False),
               0xDE: (">H", 2, True), 0xDF: (">I", 4, True)}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise MsgpackError(f"truncated msgpack data at byte {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, n: int) -> Any:
        return struct.unpack(fmt, self.take(n))[0]

    def value(self) -> Any:
        b = self.unpack(">B", 1)
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.container(b & 0x0F, is_map=True)
        if 0x90 <= b <= 0x9F:
            return self.container(b & 0x0F, is_map=False)
        if 0xA0 <= b <= 0xBF:
            return self.take(b & 0x1F).decode()
        if b in (0xC0, 0xC2, 0xC3):
            return {0xC0: None, 0xC2: False, 0xC3: True}[b]
        if b in _FIXED:
            return self.unpack(*_FIXED[b])
        if b in _SIZED:
            fmt, size, is_text = _SIZED[b]
            raw = self.take(self.unpack(fmt, size))
            return raw.decode() if is_text else raw
        if b in _CONTAINERS:
            fmt, size, is_map = _CONTAINERS[b]
            return self.container(self.unpack(fmt, size), is_map)
        raise MsgpackError(f"unsupported msgpack type byte 0x{b:02x} at byte {self.pos - 1}")

    def container(self, count: int, is_map: bool) -> Any:
        if is_map:
            return {self.value(): self.value() for _ in range(count)}
        return [self.value() for _ in range(count)]


def unpackb(data: bytes) -> Any:
    """The single msgpack object in ``data`` (trailing bytes are an error)."""
    reader = _Reader(data)
    obj = reader.value()
    if reader.pos != len(data):
        raise MsgpackError(f"{len(data) - reader.pos} trailing bytes after the msgpack object")
    return obj
