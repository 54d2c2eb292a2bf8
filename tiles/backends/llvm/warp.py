"""Warp-level LLVM IR: butterfly and indexed shuffles (tensor-core instructions are NVIDIA-only: ``backends/cuda/``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.dtypes import PointerType, ScalarType
from .builder import LLVMBuilder, Reg


class LLVMWarpOps(LLVMBuilder):
    def shuffle_xor(self, value: Any, lane_mask: int, dtype: ScalarType) -> Reg | None:
        if not self.t.shuffle_xor or isinstance(dtype, PointerType):
            return None
        return self._shuffle(value, dtype, lambda v: self._shfl32(self.t.shuffle_xor, v, Reg(str(lane_mask), "i32")))

    def shuffle_index(self, value: Any, lane: Any, dtype: ScalarType) -> Reg | None:
        if not self.t.shuffle_idx or isinstance(dtype, PointerType):
            return None
        return self._shuffle(value, dtype, lambda v: self._shfl32(self.t.shuffle_idx, v, lane))

    def _shuffle(self, value: Any, dtype: ScalarType, one: Callable[[Reg], Reg]) -> Reg:
        """``value`` moved by ``one`` (an i32 shuffle), through i32 pieces of its bits."""
        bits = 1 if dtype.is_bool else dtype.bits
        if bits == 64:
            wide = self._val("i64", f"bitcast {value} to i64") if dtype.is_floating else value
            lo = self._val("i32", f"trunc {wide} to i32")
            hi64 = self._val("i64", f"lshr {wide}, 32")
            hi = self._val("i32", f"trunc {hi64} to i32")
            slo, shi = one(lo), one(hi)
            a = self._val("i64", f"zext {slo} to i64")
            b = self._val("i64", f"zext {shi} to i64")
            b = self._val("i64", f"shl {b}, 32")
            r = self._val("i64", f"or {a}, {b.name}")
            return self._val(value.ty, f"bitcast {r} to {value.ty}") if dtype.is_floating else r
        if value.ty == "i32":
            return one(value)
        if value.ty == "float":
            i = self._val("i32", f"bitcast {value} to i32")
            return self._val("float", f"bitcast {one(i)} to float")
        int_ty = f"i{bits}"
        i = value if not dtype.is_floating else self._val(int_ty, f"bitcast {value} to {int_ty}")
        w = self._val("i32", f"zext {i} to i32")
        s = self._val(int_ty, f"trunc {one(w)} to {int_ty}")
        return s if not dtype.is_floating else self._val(value.ty, f"bitcast {s} to {value.ty}")

    def _shfl32(self, intrinsic: str, v: Reg, operand: Reg) -> Reg:
        return self._call(intrinsic, "i32", [Reg("-1", "i32"), v, operand, Reg(str(self.t.warp_size - 1), "i32")])
