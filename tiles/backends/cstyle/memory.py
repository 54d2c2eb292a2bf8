"""C for global and local memory and atomics (part of ``CStyleEmitter``).

Vector accesses are element by element here (``vector_ok`` is False); a dialect with vector
types overrides ``vector_ok``, ``load_vector`` and ``store_vector``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Loc
from ...core.kinds import AtomicKind
from ...core.ops import Op
from ..lowering.emitter import Handle
from .dialect import NARROW_FLOATS, CDialect


class CMemory:
    """Needs ``d``, ``_tmp``, ``_decl``, ``_line``, ``reg``, ``ptr_type``, ``_float_binary`` and
    ``_int_binary`` from the emitter it is mixed into."""

    d: CDialect

    def _tmp(self, ctype: str, expr: str) -> str:
        raise NotImplementedError

    def _decl(self, ctype: str) -> str:
        raise NotImplementedError

    def _line(self, text: str) -> None:
        raise NotImplementedError

    def reg(self, dt: ScalarType) -> str:
        raise NotImplementedError

    def ptr_type(self, p: PointerType) -> str:
        raise NotImplementedError

    def _float_binary(self, op: Op, a: Handle, b: Handle, dt: DType) -> str:
        raise NotImplementedError

    def _int_binary(self, op: Op, a: Handle, b: Handle, dt: DType) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------ global memory
    def _read(self, p: Handle, dt: DType) -> str:
        """The element at ``p`` as a register value."""
        if dt in NARROW_FLOATS:
            return f"tiles_{NARROW_FLOATS[dt]}_from_bits(*{p})"
        if dt.is_bool:
            return f"(*{p} != 0)"
        return f"(*{p})"

    def _write(self, p: Handle, v: Handle, dt: DType) -> str:
        """The statement storing register value ``v`` at ``p``."""
        if dt in NARROW_FLOATS:
            return f"*{p} = tiles_{NARROW_FLOATS[dt]}_bits({v});"
        if dt.is_bool:
            return f"*{p} = ({self.d.memory[dt]})({v});"
        return f"*{p} = {v};"

    def _zero(self, dt: DType) -> str:
        return "false" if dt.is_bool else f"({self.d.register[dt]})0"

    def load(self, p: Handle, dtype: DType, mask: Handle | None, other: Handle | None) -> Handle:
        t = self.d.register[dtype]
        if mask is None:
            return self._tmp(t, self._read(p, dtype))
        return self._tmp(t, f"({mask} ? {self._read(p, dtype)} : {other if other is not None else self._zero(dtype)})")

    def load_volatile(self, p: Handle, dtype: DType, mask: Handle | None, other: Handle | None) -> Handle:
        fresh = f"(({self._atomic_ptr(self.d.memory[dtype])}){p})"
        return self.load(fresh, dtype, mask, other)

    def store(self, p: Handle, value: Handle, dtype: DType, mask: Handle | None) -> None:
        stmt = self._write(p, value, dtype)
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return False

    def load_vector(self, p: Handle, dtype: DType, width: int, mask: Handle | None,
                    others: Sequence[Handle] | None) -> list[Handle]:
        return [self.load(self.ptr_offset_text(p, i), dtype, mask, others[i] if others else None)
                for i in range(width)]

    def store_vector(self, p: Handle, values: Sequence[Handle], dtype: DType, mask: Handle | None) -> None:
        for i, v in enumerate(values):
            self.store(self.ptr_offset_text(p, i), v, dtype, mask)

    @staticmethod
    def ptr_offset_text(p: Handle, i: int) -> str:
        return p if i == 0 else f"({p} + {i})"

    # ------------------------------------------------------------ atomics
    def atomic_rmw(self, kind: str, p: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc, sem: str = "acq_rel", scope: str = "gpu") -> Handle:
        kind = AtomicKind(kind)
        t = self.d.register[dtype]
        if (dtype in NARROW_FLOATS and 32 in self.d.atomic_cmpxchg) or (self._in_word(dtype) and dtype.is_int):
            return self._narrow_atomic(kind, p, value, dtype, mask, sem)
        if dtype.bits not in self.d.atomic_cmpxchg:
            raise UnsupportedError(f"atomics on {dtype} are not supported by the {self.d.name} backend; "
                                   f"use a {' or '.join(f'{b}-bit' for b in self.d.atomic_cmpxchg)} type", loc)
        old = self._tmp(t, f"({t})0")
        self._line(f"if ({mask or 'true'}) {{")
        self._fence_before(sem)
        if dtype.is_int:
            fn = self.d.atomic_rmw[dtype.bits].format(kind=kind)
            self._line(f"  {old} = {fn}(({self._atomic_ptr(t)})({p}), {value});")
        else:  # a compare-and-swap loop on the bits
            u = self.d.unsigned[dtype.bits]
            cas = self.d.atomic_cmpxchg[dtype.bits]
            seen = self.d.reinterpret.format(t=t, a="seen")
            new = value if kind.op is None else self._float_binary(kind.op, seen, value, dtype)
            self._line(f"  {self._atomic_ptr(u)} q = ({self._atomic_ptr(u)})({p});")
            self._line(f"  {u} cur = *q, seen;")
            as_u = self.d.reinterpret.format(t=u, a=f"({t})({new})")
            self._line(f"  do {{ seen = cur; cur = {cas}(q, seen, {as_u}); }} while (cur != seen);")
            self._line(f"  {old} = {seen};")
        self._fence_after(sem)
        self._line("}")
        return old

    def _fence_before(self, sem: str) -> None:
        """Release: this thread's earlier accesses are seen before the atomic (the dialect's atomics
        are relaxed, of device scope, which covers ``cta`` and, for device buffers, ``sys``)."""
        if sem in ("release", "acq_rel"):
            self._line(f"  {self._global_fence(sem)}")

    def _fence_after(self, sem: str) -> None:
        if sem in ("acquire", "acq_rel"):
            self._line(f"  {self._global_fence(sem)}")

    def _global_fence(self, sem: str) -> str:
        if not self.d.global_fence:
            raise UnsupportedError(f"atomics with sem={sem!r} need a device-scope memory fence, which tiles "
                                   f"does not know for this {self.d.name} device; pass "
                                   "sem='relaxed' if the kernel needs no ordering")
        return self.d.global_fence

    def _in_word(self, dtype: DType) -> bool:
        """Whether ``dtype``'s atomics are a compare-and-swap loop on the 32-bit word holding it."""
        return (dtype.bits == 16 and not dtype.is_bool and 16 not in self.d.atomic_cmpxchg
                and 32 in self.d.atomic_cmpxchg)

    def _word_loop(self, p: Handle, bits: int, mask: Handle | None, sem: str) -> None:
        """Open a CAS loop on the word holding ``p``'s element: ``seen`` the word, ``field`` its bits."""
        u, a = self.d.unsigned[32], self.d.address
        self._line(f"if ({mask or 'true'}) {{")
        self._fence_before(sem)
        self._line(f"  {self._atomic_ptr(u)} q = ({self._atomic_ptr(u)})(({a})({p}) & ~({a})3);")
        self._line(f"  uint shift = (uint)((({a})({p}) & 3) * 8), span = ((1u << {bits}) - 1u) << shift;")
        self._line(f"  {u} cur = *q, seen;")
        self._line("  do {")
        self._line("    seen = cur;")
        self._line(f"    {self.d.unsigned[bits]} field = ({self.d.unsigned[bits]})((seen & span) >> shift);")

    def _word_loop_end(self, put: str, sem: str) -> None:
        """Swap ``put`` (the new bits) into the field, the rest of the word kept; close the loop."""
        u = self.d.unsigned[32]
        self._line(f"    cur = {self.d.atomic_cmpxchg[32]}(q, seen, (seen & ~span) | ((({u})({put})) << shift));")
        self._line("  } while (cur != seen);")
        self._fence_after(sem)
        self._line("}")

    def _narrow_atomic(self, kind: AtomicKind, p: Handle, value: Handle, dtype: DType,
                       mask: Handle | None, sem: str) -> Handle:
        """A 16- or 8-bit atomic on the 32-bit word that holds it: floats computed as float and
        rounded back, integers in the element's own type."""
        if dtype in NARROW_FLOATS:
            n = NARROW_FLOATS[dtype]
            t, zero, decode, binary = "float", "0.0f", f"tiles_{n}_from_bits(field)", self._float_binary
            encode = f"tiles_{n}_bits(tiles_round_{n}({{}}))"
        else:
            t = self.d.register[dtype]
            zero, decode, binary = f"({t})0", f"({t})field", self._int_binary
            encode = f"({self.d.unsigned[dtype.bits]})({{}})"
        old = self._tmp(t, zero)
        self._word_loop(p, dtype.bits, mask, sem)
        self._line(f"    {t} was = {decode};")
        self._line(f"    {old} = was;")
        new = value if kind.op is None else binary(kind.op, "was", value, dtype)
        self._word_loop_end(encode.format(new), sem)
        return old

    def _narrow_cas(self, p: Handle, cmp: Handle, value: Handle, dtype: DType,
                    mask: Handle | None, sem: str) -> Handle:
        """A 16-bit ``atomic_cas`` on its 32-bit word, comparing bits (floats too) with ``cmp``'s."""
        t, ut = self.d.register[dtype], self.d.unsigned[dtype.bits]
        if dtype in NARROW_FLOATS:
            n = NARROW_FLOATS[dtype]
            c, v, back = f"tiles_{n}_bits({cmp})", f"tiles_{n}_bits({value})", f"tiles_{n}_from_bits(field)"
        else:
            c, v, back = f"({ut})({cmp})", f"({ut})({value})", f"({t})field"
        old = self._tmp(t, f"({t})0")
        self._word_loop(p, dtype.bits, mask, sem)
        self._line(f"    {old} = {back};")
        self._line(f"    if (field != {c}) break;")
        self._word_loop_end(v, sem)
        return old

    def _atomic_ptr(self, t: str) -> str:
        return self.d.atomic_pointer.format(space=self.d.global_space, t=t)

    def atomic_cas(self, p: Handle, cmp: Handle, value: Handle, dtype: DType,
                   mask: Handle | None, loc: Loc, sem: str = "acq_rel", scope: str = "gpu") -> Handle:
        t = self.d.register[dtype]
        if self._in_word(dtype):
            return self._narrow_cas(p, cmp, value, dtype, mask, sem)
        if dtype.bits not in self.d.atomic_cmpxchg:
            raise UnsupportedError(f"atomic_cas on {dtype} is not supported by the {self.d.name} backend", loc)
        old = self._tmp(t, f"({t})0")
        u = t if dtype.is_int else self.d.unsigned[dtype.bits]
        fn = self.d.atomic_cmpxchg[dtype.bits]
        c, v = (x if dtype.is_int else self.d.reinterpret.format(t=u, a=x) for x in (cmp, value))
        call = f"{fn}(({self._atomic_ptr(u)})({p}), {c}, {v})"
        result = call if dtype.is_int else self.d.reinterpret.format(t=t, a=call)
        self._line(f"if ({mask or 'true'}) {{")
        self._fence_before(sem)
        self._line(f"  {old} = {result};")
        self._fence_after(sem)
        self._line("}")
        return old

    # ------------------------------------------------------------ local memory
    def local_itemsize(self, dtype: ScalarType) -> int:
        """Local memory holds register values: 16- and 8-bit floats as float, pointers as addresses."""
        if isinstance(dtype, PointerType):
            return 8
        return 4 if dtype in NARROW_FLOATS else dtype.itemsize

    def _local(self, byte_offset: int, index: Handle, dtype: ScalarType) -> str:
        lt = self.d.address if isinstance(dtype, PointerType) else self.d.local[dtype]
        return f"(({self.d.local_space}{lt}*)(tiles_local + {byte_offset}))[{index}]"

    def local_load(self, byte_offset: int, index: Handle, dtype: ScalarType) -> Handle:
        ref = self._local(byte_offset, index, dtype)
        if isinstance(dtype, PointerType):
            return self._tmp(self.ptr_type(dtype), f"({self.ptr_type(dtype)})({ref})")
        if dtype.is_bool:
            return self._tmp("bool", f"({ref} != 0)")
        return self._tmp(self.d.register[dtype], ref)

    def local_store(self, byte_offset: int, index: Handle, value: Handle, dtype: ScalarType,
                    mask: Handle | None) -> None:
        ref = self._local(byte_offset, index, dtype)
        v = f"({self.d.address})({value})" if isinstance(dtype, PointerType) else value
        stmt = f"{ref} = {v};"
        self._line(stmt if mask is None else f"if ({mask}) {{ {stmt} }}")

    def barrier(self) -> None:
        self._line(self.d.barrier)
