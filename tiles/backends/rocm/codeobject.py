"""Reading an AMDGPU code object (HSACO): its ELF header, symbols and metadata note.

Pure Python over ``struct``: the metadata note (``NT_AMDGPU_METADATA``, msgpack) names
each kernel, its descriptor symbol (``<name>.kd``), the byte layout of its kernel
arguments, and its resource use (registers, spills, scratch).  Works on the linked
shared object and on the relocatable object ``emit_object`` returns.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .msgpack_reader import unpackb

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
NT_AMDGPU_METADATA = 32
SHT_SYMTAB, SHT_NOTE, SHT_DYNSYM = 2, 7, 11
STT_OBJECT = 1

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_NOTE_HEADER = struct.Struct("<III")


class CodeObjectError(ValueError):
    pass


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument slot in the kernarg segment."""

    name: str
    offset: int
    size: int
    value_kind: str          # global_buffer, by_value, hidden_block_count_x, ...
    address_space: str = ""  # for pointers: global, local, ...

    @property
    def is_hidden(self) -> bool:
        """Filled in by the runtime (grid sizes, implicit pointers), not by the caller."""
        return self.value_kind.startswith("hidden_")


@dataclass(frozen=True)
class KernelInfo:
    name: str
    symbol: str                      # the kernel descriptor, ``<name>.kd``
    args: tuple[KernelArg, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    wavefront_size: int
    max_flat_workgroup_size: int
    sgpr_count: int
    vgpr_count: int
    agpr_count: int
    sgpr_spill_count: int
    vgpr_spill_count: int
    private_segment_fixed_size: int  # scratch bytes per work-item (spills, stack arrays)
    group_segment_fixed_size: int    # LDS bytes
    uses_dynamic_stack: bool

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if not a.is_hidden)

    def resources(self) -> dict[str, int]:
        """Register, spill and memory use, for ``CompiledKernel.metadata``."""
        return {"sgprs": self.sgpr_count, "vgprs": self.vgpr_count, "agprs": self.agpr_count,
                "sgpr_spills": self.sgpr_spill_count, "vgpr_spills": self.vgpr_spill_count,
                "scratch_bytes": self.private_segment_fixed_size,
                "lds_bytes": self.group_segment_fixed_size}


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: int  # STT_*


@dataclass(frozen=True)
class CodeObject:
    abi_version: int   # e_ident[EI_ABIVERSION]: code object v4 -> 2, v5 -> 3, v6 -> 4
    flags: int         # e_flags: the gfx target and xnack/sramecc settings
    target: str        # amdgcn-amd-amdhsa--gfx942
    kernels: tuple[KernelInfo, ...]
    symbols: dict[str, Symbol]

    @property
    def code_object_version(self) -> int:
        return self.abi_version + 2

    def kernel(self, name: str) -> KernelInfo:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in the code object (has: "
                       f"{', '.join(k.name for k in self.kernels) or 'none'})")

    def kernel_descriptors(self) -> list[Symbol]:
        return [s for s in self.symbols.values() if s.name.endswith(".kd") and s.type == STT_OBJECT]


def _sections(data: bytes, shoff: int, shnum: int) -> list[tuple[int, ...]]:
    return [_SECTION_HEADER.unpack_from(data, shoff + i * _SECTION_HEADER.size) for i in range(shnum)]


def _c_string(data: bytes, start: int) -> str:
    return data[start:data.index(b"\0", start)].decode()


def _notes(data: bytes, offset: int, size: int):
    """(owner, type, descriptor) for each note in a SHT_NOTE section."""
    pos, end = offset, offset + size
    while pos + _NOTE_HEADER.size <= end:
        namesz, descsz, note_type = _NOTE_HEADER.unpack_from(data, pos)
        pos += _NOTE_HEADER.size
        owner = data[pos:pos + namesz].rstrip(b"\0").decode()
        pos += (namesz + 3) & ~3
        yield owner, note_type, data[pos:pos + descsz]
        pos += (descsz + 3) & ~3


def _symbols(data: bytes, sections: list[tuple[int, ...]], symtab: tuple[int, ...]) -> list[Symbol]:
    _, _, _, _, offset, size, link, _, _, entsize = symtab
    strtab_offset = sections[link][4]
    out = []
    for pos in range(offset, offset + size, entsize or _SYMBOL.size):
        name_off, info, _, _, value, sym_size = _SYMBOL.unpack_from(data, pos)
        if name_off:
            out.append(Symbol(_c_string(data, strtab_offset + name_off), value, sym_size, info & 0xF))
    return out


def _kernel_arg(entry: dict[str, Any]) -> KernelArg:
    return KernelArg(entry.get(".name", ""), entry[".offset"], entry[".size"], entry[".value_kind"],
                     entry.get(".address_space", ""))


def _kernel_info(entry: dict[str, Any]) -> KernelInfo:
    return KernelInfo(
        name=entry[".name"], symbol=entry[".symbol"],
        args=tuple(_kernel_arg(a) for a in entry.get(".args", [])),
        kernarg_segment_size=entry[".kernarg_segment_size"],
        kernarg_segment_align=entry[".kernarg_segment_align"],
        wavefront_size=entry[".wavefront_size"],
        max_flat_workgroup_size=entry[".max_flat_workgroup_size"],
        sgpr_count=entry[".sgpr_count"], vgpr_count=entry[".vgpr_count"],
        agpr_count=entry.get(".agpr_count", 0),
        sgpr_spill_count=entry.get(".sgpr_spill_count", 0),
        vgpr_spill_count=entry.get(".vgpr_spill_count", 0),
        private_segment_fixed_size=entry[".private_segment_fixed_size"],
        group_segment_fixed_size=entry[".group_segment_fixed_size"],
        uses_dynamic_stack=bool(entry.get(".uses_dynamic_stack", False)))


def read_code_object(data: bytes) -> CodeObject:
    """Parse an AMDGPU ELF; raises ``CodeObjectError`` when it is not one or lacks metadata."""
    if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise CodeObjectError("not an ELF file")
    (ident, _, machine, _, _, _, shoff, flags, _, _, _, _, shnum, _) = _ELF_HEADER.unpack_from(data)
    if ident[4] != 2 or ident[5] != 1:
        raise CodeObjectError("not a little-endian ELF64 file")
    if machine != EM_AMDGPU:
        raise CodeObjectError(f"ELF machine is {machine}, expected EM_AMDGPU ({EM_AMDGPU})")
    sections = _sections(data, shoff, shnum)
    metadata: dict[str, Any] | None = None
    symbols: dict[str, Symbol] = {}
    for section in sections:
        sh_type, offset, size = section[1], section[4], section[5]
        if sh_type == SHT_NOTE:
            for owner, note_type, desc in _notes(data, offset, size):
                if owner == "AMDGPU" and note_type == NT_AMDGPU_METADATA:
                    metadata = unpackb(desc)
        elif sh_type in (SHT_SYMTAB, SHT_DYNSYM):
            symbols.update((s.name, s) for s in _symbols(data, sections, section))
    if metadata is None:
        raise CodeObjectError("the code object has no AMDGPU metadata note")
    kernels = tuple(_kernel_info(k) for k in metadata.get("amdhsa.kernels", []))
    return CodeObject(ident[8], flags, metadata.get("amdhsa.target", ""), kernels, symbols)
