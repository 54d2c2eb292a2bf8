"""Watchpoints: report (and, in a stepped program, stop at) each write of a chosen memory element.

``TILES_WATCH`` (or ``tiles.backends.stepping.options(watch=...)``) names what to watch:

- ``out[3]``, ``out[2, 5]``: one element of the array argument ``out`` (NumPy indexing, negative
  indices allowed);
- ``out``: any element of ``out``;
- ``0x7f12...``: a host address inside an array argument (``x.ctypes.data + 4 * i``,
  ``t.data_ptr() + ...``).

Several, separated by ``;``.  Every store and atomic of the launch is checked, in the programs
stepped and in those run vectorized; each write is reported with the kernel's file:line, the
program id and the old and new value.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.dtypes import FP8E4B15_STORAGE, DType, PointerType
from ..core.errors import LaunchError
from ..core.ir import Loc
from ..core.semantics import widen
from .memory import Buffer, Memory, Pointers, Site, addresses, view_dtype


@dataclass
class Watch:
    """A watched byte range ``[lo, hi)`` of virtual addresses, and how it was named."""

    text: str
    buffer: Buffer
    lo: int
    hi: int


@dataclass
class WatchHit:
    """One write of a watched element."""

    watch: str
    element: str        # e.g. "out[3]"
    loc: Loc
    program: tuple[int, int, int]
    old: Any
    new: Any
    what: str           # "store", "atomic add", ...

    def __str__(self) -> str:
        x, y, z = self.program
        return (f"watchpoint {self.watch}: {self.element} written by program ({x}, {y}, {z}) "
                f"({self.what}) at {self.loc}: {str(self.old)} -> {str(self.new)}\n    {self.loc.source}")


_ITEM = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\[(.*)\])?\s*$")


def parse(spec: str, memory: Memory) -> list[Watch]:
    """The watches ``spec`` names, resolved against this launch's array arguments."""
    out = []
    for text in (t.strip() for t in spec.split(";")):
        if not text:
            continue
        out.append(_one(text, memory))
    return out


def _one(text: str, memory: Memory) -> Watch:
    named = {b.name: b for b in memory.buffers}
    if re.match(r"^(0x[0-9a-fA-F]+|\d+)$", text):
        addr = int(text, 0)
        for b in memory.buffers:
            if b.host[0] <= addr < b.host[1]:
                v = addr - b.host[0] + b.base
                return Watch(text, b, v, v + 1)
        raise LaunchError(f"TILES_WATCH={text}: that address is in no array argument of kernel "
                          f"'{memory.kernel}' ({_names(named)})")
    m = _ITEM.match(text)
    if m is None or m.group(1) not in named:
        raise LaunchError(f"TILES_WATCH={text!r}: expected an array argument of kernel '{memory.kernel}' "
                          f"({_names(named)}), optionally indexed (out[3], out[2, 5]), or an address")
    b = named[m.group(1)]
    if m.group(2) is None:
        return Watch(text, b, b.base, b.base + b.nbytes)
    a = b.array
    try:
        index = tuple(int(i) for i in m.group(2).split(","))
        if len(index) != a.ndim:
            raise ValueError(f"{a.ndim} indices needed")
        index = tuple(range(n)[i] for i, n in zip(index, a.shape))
    except (ValueError, IndexError) as e:
        raise LaunchError(f"TILES_WATCH={text!r}: not an element of '{b.name}' (shape "
                          f"{list(a.shape)}): {e}") from None
    host = a.__array_interface__["data"][0] + sum(i * s for i, s in zip(index, a.strides))
    v = host - b.host[0] + b.base
    return Watch(text, b, v, v + a.itemsize)


def _names(named: dict[str, Buffer]) -> str:
    return "array arguments: " + (", ".join(named) or "none")


class WatchedMemory(Memory):
    """The interpreter's checked memory, reporting writes to watched ranges to ``on_hit``."""

    watches: list[Watch]
    on_hit: Callable[[WatchHit, Site], None]

    def store(self, addr: Pointers, value: np.ndarray, mask: np.ndarray | None,
              elem: DType | PointerType, site: Site) -> None:
        hits = self._hits(addr, mask, site, view_dtype(elem).itemsize)
        before = [self._value_at(w.buffer, a, elem) for w, a, _, _ in hits]
        super().store(addr, value, mask, elem, site)
        if not hits:
            return
        a = addresses(addr)
        shape = np.broadcast_shapes((site.programs.P, *a.shape[1:]), value.shape,
                                    () if mask is None else mask.shape)
        flat = np.broadcast_to(value, shape).reshape(shape[0], -1)
        dt = view_dtype(elem)
        for (w, a_, prog, lane), old in zip(hits, before):
            new = flat[prog, lane].astype(dt)
            self._report(w, a_, prog, old, new, site)

    def atomic(self, kind: str, addr: Pointers, value: np.ndarray, cmp: np.ndarray | None,
               mask: np.ndarray | None, elem: DType, used: bool, site: Site) -> np.ndarray:
        hits = self._hits(addr, mask, site, view_dtype(elem).itemsize)
        before = [self._value_at(w.buffer, a, elem) for w, a, _, _ in hits]
        out = super().atomic(kind, addr, value, cmp, mask, elem, used, site)
        for (w, a_, prog, _), old in zip(hits, before):  # old/new: the whole atomic's effect
            self._report(w, a_, prog, old, self._value_at(w.buffer, a_, elem), site)
        return out

    def _hits(self, addr: Pointers, mask: np.ndarray | None, site: Site, size: int
              ) -> list[tuple[Watch, int, int, int]]:
        """(watch, address, program index, lane) of each program writing a watched range, in
        program order (the last of a program's lanes on it: the one that stays)."""
        a = addresses(addr)
        shape = (site.programs.P, *a.shape[1:])
        if mask is not None:
            shape = np.broadcast_shapes(shape, mask.shape)
        a = np.broadcast_to(a, shape).reshape(shape[0], -1)
        on = np.ones(a.shape, bool) if mask is None else np.broadcast_to(mask, shape).reshape(shape[0], -1)
        found = []
        for w in self.watches:
            touch = on & (a < w.hi) & (a + size > w.lo)
            if not touch.any():
                continue
            for prog in np.flatnonzero(touch.any(axis=1)):
                lane = int(np.flatnonzero(touch[prog])[-1])
                found.append((w, int(a[prog, lane]), int(prog), lane))
        return found

    def _report(self, w: Watch, addr: int, prog: int, old: Any, new: Any, site: Site) -> None:
        old, new = (_readable(v) for v in (old, new))
        hit = WatchHit(w.text, self._element(w.buffer, addr), site.loc, site.programs.pid(prog),
                       old, new, site.what)
        self.on_hit(hit, site)

    def _value_at(self, b: Buffer, addr: int, elem: DType | PointerType) -> Any:
        dt = view_dtype(elem)
        off = addr - b.base
        if off % dt.itemsize:
            return "?"
        return b.view(dt)[off // dt.itemsize]

    def _element(self, b: Buffer, addr: int) -> str:
        a = b.array
        host = addr - b.base + b.host[0] - a.__array_interface__["data"][0]
        if a.ndim == 0:
            return b.name
        rest = host
        # strides may be negative or zero; find the index greedily from the largest stride
        order = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))
        index = [0] * a.ndim
        for d in order:
            s = a.strides[d]
            if s:
                index[d] = rest // s
                rest -= index[d] * s
        idx = [str(i) for i in index]
        suffix = f"+{rest}B" if rest else ""
        return f"{b.name}[{', '.join(idx)}]{suffix}"


def print_hit(hit: WatchHit) -> None:
    print(str(hit), file=sys.stderr, flush=True)


def _readable(v: Any) -> Any:
    """A float8e4b15 element (raw bytes) as its value; anything else as it is."""
    if isinstance(v, np.generic) and v.dtype == FP8E4B15_STORAGE:
        return np.float32(widen(np.array([v]))[0])
    return v
