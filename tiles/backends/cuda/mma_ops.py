"""PTX warp tensor-core instructions (``mma.sync``, ``ldmatrix``) and ``cp.async`` for the CUDA
emitter, as LLVM NVVM intrinsics and inline PTX (sm_80+)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...core import dtypes as D
from ...core.dtypes import DType
from ..llvm.builder import LLVMBuilder, Reg


def sm_version(arch: str) -> int | None:
    """The compute capability of an ``sm_XY`` / ``sm_XYa`` arch (90 for sm_90a), else None."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    return int(m.group(1)) if m else None


def mma_tile_shape(arch: str, in_dtype: DType, acc_dtype: DType, input_precision: str) -> tuple[int, int, int] | None:
    """The mma.sync shape (m, n, k) the CUDA emitter gives a dot of these types on ``arch``, or None."""
    sm = sm_version(arch)
    if sm is None or sm < 80:
        return None
    if in_dtype.name in ("float16", "bfloat16") and acc_dtype.name in ("float32", "float16", "bfloat16"):
        return (16, 8, 16)
    if in_dtype.name == "float32" and acc_dtype.name == "float32" and input_precision == "tf32":
        return (16, 8, 8)
    if in_dtype.name in ("int8", "uint8") and acc_dtype.name == "int32":
        return (16, 8, 32)
    if in_dtype.name in ("float8e4nv", "float8e5") and acc_dtype.name == "float32" and sm >= 89:
        return (16, 8, 32)  # wgmma only (plan.py drops fp8 dots that do not fit it)
    return None


class PTXMMAOps(LLVMBuilder):
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> tuple[int, int, int] | None:
        return mma_tile_shape(self.t.arch, in_dtype, acc_dtype, input_precision)

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
        sm = sm_version(self.t.arch)
        if sm is None or sm < 80 or nbytes not in (4, 8, 16):
            return False
        q = self._local_ptr(byte_offset, byte_index, D.int8)
        kind = "cg" if nbytes == 16 else "ca"
        if mask is None:
            self._emit(f'call void asm sideeffect "cp.async.{kind}.shared.global [$0], [$1], {nbytes};", '
                       f'"r,l,~{{memory}}"({q}, {p})')
            return True
        # the ignore-src predicate operand (PTX 7.5) rather than a src-size of 0 or nbytes: the
        # assembler keeps the mask a predicate of the copy instead of selecting a size and
        # testing it again (three instructions per masked copy fewer in a pipelined loop)
        skip = self._val("i1", f"xor {mask}, true")
        self._emit(f'call void asm sideeffect "cp.async.{kind}.shared.global [$0], [$1], {nbytes}, $2;", '
                   f'"r,l,b,~{{memory}}"({q}, {p}, {skip})')
        return True

    def running_add(self, a: Any, b: Any) -> Reg:
        # through inline PTX so that LLVM's loop strength reduction cannot turn the running
        # offset back into ``base + trip * stride``, which ptxas assembles as IMAD.WIDE per copy
        return self._val("i64", f'call i64 asm "add.s64 $0, $1, $2;", "=l,l,l"({a}, {b})')

    def cp_async_commit(self) -> None:
        self._emit('call void asm sideeffect "cp.async.commit_group;", "~{memory}"()')

    def cp_async_wait(self, pending: int) -> None:
        self._emit(f'call void asm sideeffect "cp.async.wait_group {pending};", "~{{memory}}"()')

