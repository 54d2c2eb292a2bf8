"""Warp-level LLVM IR: butterfly shuffles and the tensor-core instructions
(mma.sync, ldmatrix, cp.async) the tensor-core lowering asks for."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...core import dtypes as D
from ...core.dtypes import DType, PointerType, ScalarType
from .builder import LLVMBuilder, Reg


class LLVMWarpOps(LLVMBuilder):
    def shuffle_xor(self, value: Any, lane_mask: int, dtype: ScalarType) -> Reg | None:
        if not self.t.shuffle_xor or isinstance(dtype, PointerType):
            return None
        bits = 1 if dtype.is_bool else dtype.bits
        if bits == 64:
            wide = self._val("i64", f"bitcast {value} to i64") if dtype.is_floating else value
            lo = self._val("i32", f"trunc {wide} to i32")
            hi64 = self._val("i64", f"lshr {wide}, 32")
            hi = self._val("i32", f"trunc {hi64} to i32")
            slo, shi = self._shfl32(lo, lane_mask), self._shfl32(hi, lane_mask)
            a = self._val("i64", f"zext {slo} to i64")
            b = self._val("i64", f"zext {shi} to i64")
            b = self._val("i64", f"shl {b}, 32")
            r = self._val("i64", f"or {a}, {b.name}")
            return self._val(value.ty, f"bitcast {r} to {value.ty}") if dtype.is_floating else r
        if value.ty == "i32":
            return self._shfl32(value, lane_mask)
        if value.ty == "float":
            i = self._val("i32", f"bitcast {value} to i32")
            return self._val("float", f"bitcast {self._shfl32(i, lane_mask)} to float")
        int_ty = f"i{bits}"
        i = value if not dtype.is_floating else self._val(int_ty, f"bitcast {value} to {int_ty}")
        w = self._val("i32", f"zext {i} to i32")
        s = self._val(int_ty, f"trunc {self._shfl32(w, lane_mask)} to {int_ty}")
        return s if not dtype.is_floating else self._val(value.ty, f"bitcast {s} to {value.ty}")

    def _shfl32(self, v: Reg, lane_mask: int) -> Reg:
        return self._call(self.t.shuffle_xor, "i32", [Reg("-1", "i32"), v, Reg(str(lane_mask), "i32"),
                                                       Reg(str(self.t.warp_size - 1), "i32")])


    # ------------------------------------------------------------ tensor cores
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> tuple[int, int, int] | None:
        m = re.fullmatch(r"sm_(\d+)a?", self.t.arch)
        if m is None or int(m.group(1)) < 80:
            return None
        if in_dtype.name in ("float16", "bfloat16") and acc_dtype.name in ("float32", "float16", "bfloat16"):
            return (16, 8, 16)
        if in_dtype.name == "float32" and acc_dtype.name == "float32" and input_precision == "tf32":
            return (16, 8, 8)
        if in_dtype.name in ("int8", "uint8") and acc_dtype.name == "int32":
            return (16, 8, 32)
        return None

    def mma(self, shape: tuple[int, int, int], a: Sequence[Any], b: Sequence[Any], c: Sequence[Any],
            in_dtype: DType) -> list[Any]:
        m, n, k = shape
        if in_dtype.name == "float16":
            name, it = f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.f32.f32", "<2 x half>"
            a = [self._val(it, f"bitcast {r} to {it}") for r in a]
            b = [self._val(it, f"bitcast {r} to {it}") for r in b]
        else:
            kind = {"bfloat16": "bf16", "float32": "tf32", "int8": "s8", "uint8": "u8"}[in_dtype.name]
            name = f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.{kind}"
        ct = "i32" if in_dtype.is_int else "float"
        st = "{" + ", ".join([ct] * 4) + "}"
        res = self._call(name, st, [*a, *b, *c])
        return [self._val(ct, f"extractvalue {res}, {i}") for i in range(4)]

    def pack_pair(self, lo: Any, hi: Any, dtype: DType) -> Reg:
        vt = f"<2 x {lo.ty}>"
        v = self._val(vt, f"insertelement {vt} poison, {lo}, i32 0")
        v = self._val(vt, f"insertelement {vt} {v.name}, {hi}, i32 1")
        return self._val("i32", f"bitcast {v} to i32")

    def ldmatrix(self, byte_offset: int, byte_index: Any, count: int, trans: bool) -> list[Any]:
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.b16"
        if count == 1:
            return [self._call(name, "i32", [q])]
        st = "{" + ", ".join(["i32"] * count) + "}"
        res = self._call(name, st, [q])
        return [self._val("i32", f"extractvalue {res}, {i}") for i in range(count)]

    def cp_async(self, byte_offset: int, byte_index: Any, p: Any, nbytes: int, mask: Any) -> bool:
        m = re.fullmatch(r"sm_(\d+)a?", self.t.arch)
        if m is None or int(m.group(1)) < 80 or nbytes not in (4, 8, 16):
            return False
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        size = Reg(str(nbytes), "i32") if mask is None else \
            self._val("i32", f"select {mask}, i32 {nbytes}, i32 0")
        kind = "cg" if nbytes == 16 else "ca"
        self._emit(f'call void asm sideeffect "cp.async.{kind}.shared.global [$0], [$1], {nbytes}, $2;", '
                   f'"r,l,r,~{{memory}}"({q}, {p}, {size})')
        return True

    def cp_async_commit(self) -> None:
        self._emit('call void asm sideeffect "cp.async.commit_group;", "~{memory}"()')

    def cp_async_wait(self, pending: int) -> None:
        self._emit(f'call void asm sideeffect "cp.async.wait_group {pending};", "~{{memory}}"()')

