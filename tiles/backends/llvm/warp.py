"""Warp-level LLVM IR: butterfly shuffles (tensor-core instructions are NVIDIA-only: ``backends/cuda/``)."""

from __future__ import annotations

from typing import Any

from ...core.dtypes import PointerType, ScalarType
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
