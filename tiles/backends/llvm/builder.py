"""The plumbing under the LLVM emitter: registers, blocks, declarations and types.

Handles are ``Reg``s: an SSA name (or literal) with its LLVM type.  Blocks are kept
as line lists, so loop headers can receive their phis after the body is known.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ops import Op
from ..base import Target
from .target import LLVMTarget


@dataclass(frozen=True)
class Reg:
    name: str
    ty: str

    def __str__(self) -> str:
        return f"{self.ty} {self.name}"


_INT_TY = {1: "i1", 8: "i8", 16: "i16", 32: "i32", 64: "i64", 128: "i128"}
_FLOAT_TY = {"float16": "half", "bfloat16": "bfloat", "float32": "float", "float64": "double"}
_ICMP = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}
_FCMP = {Op.EQ: "oeq", Op.NE: "une", Op.LT: "olt", Op.LE: "ole", Op.GT: "ogt", Op.GE: "oge"}
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _hex_double(x: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]




class LLVMBuilder:
    def __init__(self, target: Target, llvm_target: LLVMTarget) -> None:
        self.target = target
        self.t = llvm_target
        self.blocks: dict[str, list[str]] = {}
        self.order: list[str] = []
        self.counter = 0
        self.decls: dict[str, str] = {}
        self.globals: list[str] = []
        self.loop_metadata: list[str] = []  # numbered after the target's module flags
        self.uses_smem = False
        self.local_base = 0  # added to local-memory offsets (``Emitter.local_base``)
        self.name = ""
        self.params: list[tuple[str, str]] = []
        self.threads = 0
        self.cur = self._new_block("entry")


    # ------------------------------------------------------------ plumbing
    def _new_block(self, hint: str) -> str:
        self.counter += 1
        label = f"{hint}{self.counter}"
        self.blocks[label] = []
        self.order.append(label)
        return label

    def _emit(self, line: str) -> None:
        self.blocks[self.cur].append("  " + line)

    def _val(self, ty: str, rhs: str) -> Reg:
        self.counter += 1
        name = f"%v{self.counter}"
        self._emit(f"{name} = {rhs}")
        return Reg(name, ty)

    def _declare(self, name: str, ret: str, args: Sequence[str]) -> str:
        self.decls.setdefault(name, f"declare {ret} @{name}({', '.join(args)})")
        return name

    def _call(self, fn: str, ret: str, args: Sequence[Reg], flags: str = "") -> Reg:
        self._declare(fn, ret, [a.ty for a in args])
        return self._val(ret, f"call {flags + ' ' if flags else ''}{ret} @{fn}({', '.join(map(str, args))})")

    def _branch(self, cond: Reg, then: str, other: str) -> None:
        self._emit(f"br {cond}, label %{then}, label %{other}")

    def _jump(self, label: str) -> None:
        self._emit(f"br label %{label}")

    # ------------------------------------------------------------ types
    def ty(self, dtype: ScalarType) -> str:
        if isinstance(dtype, PointerType):
            return f"ptr addrspace({self.t.global_addrspace})"
        if dtype.is_floating:
            if dtype.name not in _FLOAT_TY:
                raise UnsupportedError(f"{dtype} arithmetic is not supported on {self.target.backend}")
            return _FLOAT_TY[dtype.name]
        return _INT_TY[dtype.bits]

    def mem_ty(self, dtype: ScalarType) -> str:
        return "i8" if not isinstance(dtype, PointerType) and dtype.is_bool else self.ty(dtype)

    def _to_mem(self, v: Reg, dtype: ScalarType) -> Reg:
        if not isinstance(dtype, PointerType) and dtype.is_bool:
            return self._val("i8", f"zext {v} to i8")
        return v

    def _from_mem(self, v: Reg, dtype: ScalarType) -> Reg:
        if not isinstance(dtype, PointerType) and dtype.is_bool:
            return self._val("i1", f"icmp ne {v}, 0")
        return v

    def _zero(self, dtype: ScalarType) -> Reg:
        if isinstance(dtype, PointerType):
            return Reg("null", self.ty(dtype))
        return self.constant(0, dtype)

    def _is_half(self, dtype: DType) -> bool:
        return dtype.name in ("float16", "bfloat16")

    def _up(self, v: Reg, dtype: DType) -> Reg:
        return self._val("float", f"fpext {v} to float") if self._is_half(dtype) else v

    def _down(self, v: Reg, dtype: DType) -> Reg:
        return self._val(self.ty(dtype), f"fptrunc {v} to {self.ty(dtype)}") if self._is_half(dtype) else v

    def constant(self, value: bool | int | float, dtype: DType) -> Reg:
        ty = self.ty(dtype)
        if dtype.is_bool:
            return Reg("true" if value else "false", ty)
        if dtype.is_int:
            return Reg(str(int(value)), ty)
        if dtype.name == "float16":
            return Reg("0xH%04X" % int(np.array(value, np.float16).view(np.uint16)), ty)
        if dtype.name == "bfloat16":
            return Reg("0xR%04X" % int(np.array(value, ml_dtypes.bfloat16).view(np.uint16)), ty)
        if dtype.name == "float32":
            return Reg(_hex_double(float(np.float32(value))), ty)
        return Reg(_hex_double(float(value)), ty)

    def _local_ptr(self, byte_offset: int, index: Any, dtype: ScalarType) -> Reg:
        self.uses_smem = True
        sp = f"ptr addrspace({self.t.shared_addrspace})"
        base = self._val(sp, f"getelementptr i8, {sp} @tiles_smem, i32 {byte_offset + self.local_base}")
        return self._val(sp, f"getelementptr {self.local_ty(dtype)}, {base}, {index}")

    def local_ty(self, dtype: ScalarType) -> str:
        return self.mem_ty(dtype)


def _zero_literal(ty: str) -> str:
    return _hex_double(0.0) if ty in ("float", "double") else ("0xH0000" if ty == "half" else "0xR0000")


def _float_rank(ty: str) -> int:
    return {"half": 1, "bfloat": 1, "float": 2, "double": 3}[ty]



