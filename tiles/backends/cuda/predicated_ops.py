"""Masked global loads and stores as one predicated PTX instruction (``@p ld.global``/``st.global``)
instead of a branch around a plain one, as ``Options.codegen.predicated`` says: "all" (``TILES_PREDICATED=1``),
"loads" (loads only), "outside_loops" (loads outside the kernel's loops: the default) or "" (none).
Measured on the corpus (benchmarks/RESULTS.md): every access predicated slowed some kernels; loads
alone left straight-line kernels within noise and sped up Mamba's state update (ptxas sinks a
branched load of its state past the arithmetic before it, a second trip to memory), but slowed the
loops of Liger's JSD and group norm -- hence loads outside loops only.

A tile's masked accesses otherwise become one basic block each; with dozens of them (a 32768-wide
row in 128 threads is 64 vector loads a thread) ptxas schedules and allocates registers block by
block, and can end up spilling a kernel that fits in registers when its accesses are straight-line
code.  The inline asm is ``sideeffect`` so that LLVM keeps it in program order with the kernel's
other memory operations and barriers; ptxas still schedules the instructions themselves.  Masked
loads first copy the ``other`` values into their destination registers, which the load overwrites
where the predicate holds.  Element types without a plain bit pattern of 16, 32 or 64 bits (bool,
pointers, 8-bit scalars) keep the branch.  ``sideeffect`` also keeps a load LLVM would delete as
unused (one the lowering made and then read again in another layout, ``broadcast_loads.py``): ``finish``
drops those itself.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ...core.dtypes import DType, ScalarType
from ..llvm.builder import LLVMBuilder, Reg

_PURE = ("bitcast ", "extractvalue ", "insertelement ", "extractelement ")  # what a load's result goes through
_NAME = re.compile(r"%[\w.]+")
_DEF = re.compile(r"\s*(%[\w.]+) = (.*)")
_WORD = {16: ("b16", "h", "i16"), 32: ("b32", "r", "i32"), 64: ("b64", "l", "i64")}  # PTX type, constraint, LLVM


class PTXPredicatedMemoryOps(LLVMBuilder):
    predicated_access = ""  # set per lowering from Options.codegen.predicated (choices.py): module doc
    _loop_depth = 0  # loops around the code being emitted
    _loads: set[str]  # names of the predicated loads' results

    def finish(self, local_bytes: int) -> str:
        self._drop_unused_loads()
        return super().finish(local_bytes)  # type: ignore[misc, no-any-return]

    def _drop_unused_loads(self) -> None:
        """Delete the predicated loads whose values nothing uses, with the unused element moves that
        follow them (LLVM keeps a ``sideeffect`` asm: module doc)."""
        loads: set[str] = getattr(self, "_loads", set())
        while loads:
            used: set[str] = set()
            for lines in self.blocks.values():
                for line in lines:
                    d = _DEF.match(line)
                    used.update(_NAME.findall(d.group(2) if d else line))
            dropped = False
            for label, lines in self.blocks.items():
                kept = [line for line in lines if not ((d := _DEF.match(line)) and d.group(1) not in used and (
                    d.group(1) in loads or d.group(2).startswith(_PURE)))]
                dropped = dropped or len(kept) < len(lines)
                self.blocks[label] = kept
            if not dropped:
                break

    @contextlib.contextmanager
    def _in_loop(self) -> Iterator[None]:
        self._loop_depth += 1
        try:
            yield
        finally:
            self._loop_depth -= 1

    def for_range(self, *args: Any, **kwargs: Any) -> Any:
        with self._in_loop():
            return super().for_range(*args, **kwargs)  # type: ignore[misc]

    def while_loop(self, *args: Any, **kwargs: Any) -> Any:
        with self._in_loop():
            return super().while_loop(*args, **kwargs)  # type: ignore[misc]

    def _words(self, dtype: ScalarType, width: int) -> tuple[int, int] | None:
        """(bits per word, words) of ``width`` elements of ``dtype`` as one predicated access."""
        if not isinstance(dtype, DType) or dtype.is_bool:
            return None
        total = dtype.bits * width
        if width == 1:
            return (dtype.bits, 1) if dtype.bits in _WORD else None
        word = 64 if dtype.bits == 64 else 32
        words = total // word
        return (word, words) if total % word == 0 and words in (1, 2, 4) else None

    def _as_words(self, vec: Reg, word: int, words: int) -> list[Reg]:
        ty = _WORD[word][2]
        if words == 1:
            return [self._val(ty, f"bitcast {vec} to {ty}")]
        as_words = self._val(f"<{words} x {ty}>", f"bitcast {vec} to <{words} x {ty}>")
        return [self._val(ty, f"extractelement {as_words}, i32 {i}") for i in range(words)]

    def _predicated_load(self, p: Reg, mask: Reg, vt: str, other: Reg, word: int, words: int) -> Reg:
        ptx, letter, ty = _WORD[word]
        outs = ", ".join(f"${i}" for i in range(words))
        moves = " ".join(f"mov.{ptx} ${i}, ${words + 1 + i};" for i in range(words))
        vector = f".v{words}" if words > 1 else ""
        target = f"{{{outs}}}" if words > 1 else "$0"
        text = f"{moves} @${words} ld.global{vector}.{ptx} {target}, [${2 * words + 1}];"
        constraints = ",".join([f"={letter}"] * words + ["b"] + [letter] * words + ["l"])
        result = ty if words == 1 else "{" + ", ".join([ty] * words) + "}"
        args = ", ".join(str(a) for a in (mask, *self._as_words(other, word, words), p))
        loaded = self._val(result, f'call {result} asm sideeffect "{text}", "{constraints}"({args})')
        self.__dict__.setdefault("_loads", set()).add(loaded.name)
        if words == 1:
            return self._val(vt, f"bitcast {loaded} to {vt}")
        packed = Reg("undef", f"<{words} x {ty}>")
        for i in range(words):
            part = self._val(ty, f"extractvalue {loaded}, {i}")
            packed = self._val(packed.ty, f"insertelement {packed}, {part}, i32 {i}")
        return self._val(vt, f"bitcast {packed} to {vt}")

    def _predicable(self, mask: Any, store: bool = False) -> bool:
        mode = self.predicated_access
        load_mode = mode == "loads" or (mode == "outside_loops" and not self._loop_depth)
        wanted = mode == "all" or (not store and load_mode)
        return wanted and mask is not None and mask.name not in ("true", "false")

    def load(self, p: Any, dtype: DType, mask: Any, other: Any) -> Reg:
        shape = self._words(dtype, 1)
        if not self._predicable(mask) or shape is None:
            return super().load(p, dtype, mask, other)  # type: ignore[misc, no-any-return]
        mt = self.mem_ty(dtype)
        other = other if other is not None else self._zero(dtype)
        return self._predicated_load(p, mask, mt, other, *shape)

    def load_vector(self, p: Any, dtype: DType, width: int, mask: Any, others: Any) -> list[Any]:
        shape = self._words(dtype, width)
        if not self._predicable(mask) or shape is None:
            return super().load_vector(p, dtype, width, mask, others)  # type: ignore[misc, no-any-return]
        mt = self.mem_ty(dtype)
        vt = f"<{width} x {mt}>"
        other = Reg("zeroinitializer", vt)
        if others is not None:
            other = Reg("undef", vt)
            for i, o in enumerate(others):
                other = self._val(vt, f"insertelement {other}, {o}, i32 {i}")
        vec = self._predicated_load(p, mask, vt, other, *shape)
        return [self._val(mt, f"extractelement {vec}, i32 {i}") for i in range(width)]

    def _predicated_store(self, p: Reg, mask: Reg, vec: Reg, word: int, words: int) -> None:
        ptx, letter, _ = _WORD[word]
        ins = ", ".join(f"${i + 2}" for i in range(words))
        vector = f".v{words}" if words > 1 else ""
        source = f"{{{ins}}}" if words > 1 else "$2"
        constraints = ",".join(["b", "l"] + [letter] * words)
        args = ", ".join(str(a) for a in (mask, p, *self._as_words(vec, word, words)))
        self._emit(f'call void asm sideeffect "@$0 st.global{vector}.{ptx} [$1], {source};", "{constraints}"({args})')

    def store(self, p: Any, value: Any, dtype: DType, mask: Any) -> None:
        shape = self._words(dtype, 1)
        if not self._predicable(mask, store=True) or shape is None:
            super().store(p, value, dtype, mask)  # type: ignore[misc]
            return
        self._predicated_store(p, mask, value, *shape)

    def store_vector(self, p: Any, values: Sequence[Any], dtype: DType, mask: Any) -> None:
        shape = self._words(dtype, len(values))
        if not self._predicable(mask, store=True) or shape is None:
            super().store_vector(p, values, dtype, mask)  # type: ignore[misc]
            return
        vt = f"<{len(values)} x {self.mem_ty(dtype)}>"
        vec = Reg("undef", vt)
        for i, v in enumerate(values):
            vec = self._val(vt, f"insertelement {vec}, {v}, i32 {i}")
        self._predicated_store(p, mask, vec, *shape)
