"""``tl.device_print`` on the CUDA emitter: CUDA's device-side ``vprintf``.

Each call prints one line per owning thread, as the OpenCL backend does:
``pid (x, y, z) <prefix> <values>``.  ``vprintf(format, arguments)`` takes the format as a
generic pointer to a global string and the arguments packed in a local buffer, each at its
natural alignment (an LLVM struct of them): integers narrower than 32 bits widened to ``int``,
64-bit integers as they are, floats as ``double`` (C's variadic promotion), pointers as 64-bit
addresses.  The driver writes the lines to the process's standard output when the host next
synchronizes with the kernel.  Buffers are allocated in the entry block, so a print inside a
loop reuses its buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core import dtypes as D
from ...core.dtypes import PointerType, ScalarType
from ..llvm.builder import LLVMBuilder, Reg


class PTXPrintOps(LLVMBuilder):
    def _print_field(self, h: Any, dt: ScalarType) -> tuple[str, Reg]:
        """The conversion and the promoted value of one printed value."""
        if isinstance(dt, PointerType):
            return "%p", self._val("i64", f"ptrtoint {h} to i64")
        assert isinstance(dt, D.DType)
        if dt.is_floating:
            x = h if dt in (D.float32, D.float64) else self.cast(h, dt, D.float32)  # type: ignore[attr-defined]
            return "%f", x if dt == D.float64 else self._val("double", f"fpext {x} to double")
        if dt.bits == 64:
            return ("%ld" if dt.is_signed else "%lu"), h
        unsigned = dt.kind is D.Kind.UINT
        wide = h if dt.bits == 32 else self._val("i32", f"{'sext' if dt.is_signed else 'zext'} {h} to i32")
        return ("%u" if unsigned else "%d"), wide

    def device_print(self, prefix: str, values: Sequence[tuple[Any, ScalarType]]) -> None:
        fields = [self._print_field(h, dt) for h, dt in values]
        text = prefix.replace("%", "%%")
        line = f"pid (%d, %d, %d) {text} {' '.join(f for f, _ in fields)}\n".encode() + b"\0"
        self.counter += 1
        fmt = f"@tiles_fmt{self.counter}"
        chars = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in line)
        self.globals.append(f'{fmt} = private unnamed_addr addrspace(1) constant [{len(line)} x i8] c"{chars}", '
                            'align 1')
        args = [self._call(self.t.block_id[axis], "i32", []) for axis in range(3)] + [v for _, v in fields]
        struct = "{ " + ", ".join(a.ty for a in args) + " }"
        self.counter += 1
        buffer = f"%print_args{self.counter}"
        self.blocks[self.order[0]].insert(0, f"  {buffer} = alloca {struct}, align 8")
        for i, a in enumerate(args):
            at = self._val("ptr", f"getelementptr inbounds {struct}, ptr {buffer}, i32 0, i32 {i}")
            self._emit(f"store {a}, {at}")
        generic = self._val("ptr", f"addrspacecast ptr addrspace(1) {fmt} to ptr")
        self._call("vprintf", "i32", [generic, Reg(buffer, "ptr")])
