"""OpenCL C for global and local memory and atomics (part of ``OpenCLEmitter``)."""

from __future__ import annotations

from collections.abc import Sequence

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ..lowering.emitter import Handle
from . import ctext as ct

_CAS_COMBINE = {"add": "{old} + {v}", "max": "fmax({old}, {v})", "min": "fmin({old}, {v})",
                "xchg": "{v}"}


class MemoryMixin:
    """Needs ``_tmp``, ``_decl`` and ``_line`` from the emitter it is mixed into."""

    def _tmp(self, ctype: str, expr: str) -> str:
        raise NotImplementedError  # provided by OpenCLEmitter

    def _decl(self, ctype: str) -> str:
        raise NotImplementedError

    def _line(self, text: str) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ global memory
    def _read(self, p: Handle, dt: DType) -> str:
        if dt == D.float16:
            return f"vload_half(0, {p})"
        if dt == D.bfloat16:
            return f"tiles_bf16_from_bits(*{p})"
        if dt.is_bool:
            return f"(*{p} != 0)"
        return f"(*{p})"

    def _write(self, p: Handle, v: Handle, dt: DType) -> str:
        if dt == D.float16:
            return f"vstore_half_rte({v}, 0, {p});"
        if dt == D.bfloat16:
            return f"*{p} = tiles_bf16_bits({v});"
        if dt.is_bool:
            return f"*{p} = (uchar)({v});"
        return f"*{p} = {v};"

    def load(self, p: Handle, dtype: DType, mask: Handle | None, other: Handle | None) -> Handle:
        t = ct.REGISTER[dtype]
        if mask is None:
            return self._tmp(t, self._read(p, dtype))
        if other is None:
            other = "false" if dtype.is_bool else f"({t})0"
        return self._tmp(t, f"({mask} ? {self._read(p, dtype)} : {other})")

    def _vector(self, dtype: DType, width: int) -> str:
        return f"{ct.MEMORY[dtype] if dtype != D.float16 else 'float'}{width}"

    def _vread(self, p: Handle, dtype: DType, width: int) -> str:
        if dtype == D.float16:
            return f"vload_half{width}(0, {p})"
        return f"*((__global const {self._vector(dtype, width)}*)({p}))"

    def _element(self, vec: str, i: int, dtype: DType) -> str:
        part = f"{vec}.s{i}"
        if dtype == D.bfloat16:
            return f"tiles_bf16_from_bits({part})"
        if dtype.is_bool:
            return f"({part} != 0)"
        return part

    def load_vector(self, p: Handle, dtype: DType, width: int, mask: Handle | None,
                    others: Sequence[Handle] | None) -> list[Handle]:
        t = ct.REGISTER[dtype]
        if mask is None:
            vec = self._tmp(self._vector(dtype, width), self._vread(p, dtype, width))
            return [self._tmp(t, self._element(vec, i, dtype)) for i in range(width)]
        outs = [self._decl(t) for _ in range(width)]
        self._line(f"if ({mask}) {{")
        vec = self._tmp(self._vector(dtype, width), self._vread(p, dtype, width))
        for i, o in enumerate(outs):
            self._line(f"  {o} = {self._element(vec, i, dtype)};")
        self._line("} else {")
        for i, o in enumerate(outs):
            zero = "false" if dtype.is_bool else f"({t})0"
            self._line(f"  {o} = {others[i] if others else zero};")
        self._line("}")
        return outs

    def store(self, p: Handle, value: Handle, dtype: DType, mask: Handle | None) -> None:
        stmt = self._write(p, value, dtype)
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")

    def store_vector(self, p: Handle, values: Sequence[Handle], dtype: DType,
                     mask: Handle | None) -> None:
        w = len(values)
        if dtype == D.float16:
            stmt = f"vstore_half{w}_rte((float{w})({', '.join(values)}), 0, {p});"
        else:
            vt = self._vector(dtype, w)
            if dtype == D.bfloat16:
                parts = [f"tiles_bf16_bits({v})" for v in values]
            elif dtype.is_bool:
                parts = [f"(uchar)({v})" for v in values]
            else:
                parts = list(values)
            stmt = f"*((__global {vt}*)({p})) = ({vt})({', '.join(parts)});"
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")

    # ------------------------------------------------------------ atomics
    def atomic_rmw(self, kind: str, p: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc) -> Handle:
        t = ct.REGISTER[dtype]
        if dtype.bits < 32:
            raise UnsupportedError(f"atomics on {dtype} are not supported by the OpenCL backend; "
                                   "use a 32- or 64-bit type", loc)
        old = self._tmp(t, f"({t})0")
        self._line(f"if ({mask or 'true'}) {{")
        if dtype.is_int:
            fn = ("atomic_" if dtype.bits == 32 else "atom_") + kind
            self._line(f"  {old} = {fn}((volatile __global {t}*)({p}), {value});")
        else:
            u = "uint" if dtype.bits == 32 else "ulong"
            cas = "atomic_cmpxchg" if dtype.bits == 32 else "atom_cmpxchg"
            new = _CAS_COMBINE[kind].format(old=f"as_{t}(seen)", v=value)
            self._line(f"  volatile __global {u}* q = (volatile __global {u}*)({p});")
            self._line(f"  {u} cur = *q, seen;")
            self._line(f"  do {{ seen = cur; cur = {cas}(q, seen, as_{u}(({t})({new}))); }} "
                       "while (cur != seen);")
            self._line(f"  {old} = as_{t}(seen);")
        self._line("}")
        return old

    def atomic_cas(self, p: Handle, cmp: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc) -> Handle:
        t = ct.REGISTER[dtype]
        if dtype.bits < 32:
            raise UnsupportedError(f"atomic_cas on {dtype} is not supported by the OpenCL backend", loc)
        old = self._tmp(t, f"({t})0")
        u = t if dtype.is_int else ("uint" if dtype.bits == 32 else "ulong")
        fn = "atomic_cmpxchg" if dtype.bits == 32 else "atom_cmpxchg"
        c, v = (x if dtype.is_int else f"as_{u}({x})" for x in (cmp, value))
        call = f"{fn}((volatile __global {u}*)({p}), {c}, {v})"
        self._line(f"if ({mask or 'true'}) {{ {old} = {call if dtype.is_int else f'as_{t}({call})'}; }}")
        return old

    # ------------------------------------------------------------ local memory
    def local_itemsize(self, dtype: ScalarType) -> int:
        if isinstance(dtype, PointerType):
            return 8
        return 4 if dtype in (D.float16, D.bfloat16) else dtype.itemsize

    def _local(self, byte_offset: int, index: Handle, dtype: ScalarType) -> str:
        lt = "ulong" if isinstance(dtype, PointerType) else ct.LOCAL[dtype]
        return f"((__local {lt}*)(tiles_local + {byte_offset}))[{index}]"

    def local_load(self, byte_offset: int, index: Handle, dtype: ScalarType) -> Handle:
        ref = self._local(byte_offset, index, dtype)
        if isinstance(dtype, PointerType):
            return self._tmp(ct.ptr_type(dtype), f"({ct.ptr_type(dtype)})({ref})")
        if dtype.is_bool:
            return self._tmp("bool", f"({ref} != 0)")
        return self._tmp(ct.REGISTER[dtype], ref)

    def local_store(self, byte_offset: int, index: Handle, value: Handle, dtype: ScalarType,
                    mask: Handle | None) -> None:
        ref = self._local(byte_offset, index, dtype)
        v = f"(ulong)({value})" if isinstance(dtype, PointerType) else value
        stmt = f"{ref} = {v};"
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")

    def barrier(self) -> None:
        self._line("barrier(CLK_LOCAL_MEM_FENCE);")
