"""The interpreter's memory: the kernel's array arguments as checked buffers.

A pointer is an int64 *virtual address* that packs (buffer, byte offset): buffer
``k`` starts at ``(FIRST_SLOT + k) << 44`` (2**62 and up, above any host address),
so ``ADDPTR`` is an integer add, ``WHERE`` can mix buffers, and ``PTR_TO_INT`` gives
an address that is 2**44-aligned at the lowest byte of every buffer.  A buffer is an
argument's *own* memory extent (lowest to highest byte of the view's elements,
negative strides included), never its parent's.

``INT_TO_PTR`` of a host address (``x.ctypes.data``, ``t.data_ptr()`` loaded from
memory) resolves it to the buffer of the array argument whose extent holds it (the
largest, where arguments overlap), else to a live NumPy array or CPU torch tensor that
holds it (live_arrays.py), which becomes a buffer of the launch.  Virtual addresses
and 0 are kept; an address in nothing stays as it is and points into no buffer, so an
access through it fails naming both lines.

Every load, store and atomic checks, for the lanes its mask leaves on, that the
access lies inside one buffer and is aligned to the element size, and raises a
``KernelRuntimeError`` naming the kernel, the line, the program and the offset
otherwise.  Masked-off lanes never touch memory.  Accesses go through typed
views of the buffer's bytes, so a pointer whose element type differs from the
array's dtype reinterprets the bytes, as on a GPU.  Stores apply lanes in
(program, lane) order, so the last writer wins.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.dtypes import DType, PointerType
from ..core.errors import KernelRuntimeError, LaunchError
from ..core.ir import Kernel, Loc
from ..core.semantics import broadcast_shape, constant
from . import atomics
from .live_arrays import LiveIndex, remembered_arrays
from .live_arrays import extent as _extent
from .programs import Programs

SHIFT = 44
SPAN = 1 << SHIFT
FIRST_SLOT = 1 << 18  # buffer k's base is (FIRST_SLOT + k) << SHIFT = 2**62 + k * 2**44
VIRTUAL = FIRST_SLOT << SHIFT
_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3}


@dataclass
class Site:
    """Where an access happens, for error messages."""

    kernel: str
    loc: Loc
    what: str  # "load", "store", "atomic add", ...
    programs: Programs


class _Raw:
    """Exposes ``nbytes`` bytes at ``address`` to NumPy (keeps ``owner`` alive)."""

    def __init__(self, address: int, nbytes: int, readonly: bool, owner: Any) -> None:
        self.owner = owner
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


def view_dtype(elem: DType | PointerType) -> np.dtype:
    """The NumPy dtype memory is read with for a pointee type (int1 is one byte)."""
    if isinstance(elem, PointerType):
        return np.dtype(np.int64)
    if elem.is_bool:
        return np.dtype(np.uint8)
    return elem.np


class DeferredPtr:
    """``ADDPTR(p, i)`` whose only uses are memory accesses, kept as its operands: an access
    through a uniform base then indexes with ``i`` directly, and no int64 address tile is
    ever built.  ``addresses()`` gives the addresses when they are needed after all."""

    __slots__ = ("p", "i", "size", "shape")

    def __init__(self, p: np.ndarray, i: np.ndarray, size: int) -> None:
        self.p, self.i, self.size = p, i, size
        self.shape = broadcast_shape(p.shape, i.shape)


Pointers = np.ndarray | DeferredPtr


def addresses(ptr: Pointers) -> np.ndarray:
    """The int64 addresses of a pointer value."""
    if not isinstance(ptr, DeferredPtr):
        return ptr
    r = np.multiply(np.broadcast_to(ptr.i, ptr.shape), np.int64(ptr.size), dtype=np.int64)
    return np.add(r, ptr.p, out=r)


def _one_copy(x: np.ndarray) -> np.ndarray:
    """A broadcast view repeats its data along zero-stride axes: one copy of it."""
    if 0 not in x.strides:
        return x
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.strides)]


_SELECT_LIMIT = 1 << 16
_RUN_MIN = 512  # offset tiles at least this big are checked for a run of consecutive elements


def _distinct(x: np.ndarray) -> list[int]:
    """The distinct values of an int array, ascending (``np.unique`` without its masked-array test,
    whose first use imports ``numpy.ma``: tens of milliseconds)."""
    if not x.size:
        return []
    lo, hi = int(x.min()), int(x.max())
    if lo == hi:
        return [lo]
    s = np.sort(x, axis=None)
    return [int(v) for v in s[np.concatenate(([True], s[1:] != s[:-1]))]]


def _to_shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``x`` broadcast to ``shape`` (``np.broadcast_to`` costs more than most small ops: skip it
    when the shape is already right)."""
    return x if x.shape == shape else np.broadcast_to(x, shape)


def _min_max(x: np.ndarray, mask: np.ndarray | None) -> tuple[int, int]:
    """The least and greatest of ``x`` over the lanes ``mask`` leaves on (all when None); with no
    lane on, (the dtype's max, its min)."""
    if x.size == 1 and (mask is None or mask.all()):
        v = int(x.flat[0])
        return v, v
    if mask is None:
        x = _one_copy(x)
        return int(x.min()), int(x.max())
    shape = broadcast_shape(x.shape, mask.shape)
    x, mask = _to_shape(x, shape), _to_shape(mask, shape)
    if x.size <= _SELECT_LIMIT:  # small tiles: one copy of the active lanes beats two masked reductions
        active = x[mask]
        if active.size:
            return int(active.min()), int(active.max())
        info = np.iinfo(x.dtype)
        return int(info.max), int(info.min)
    info = np.iinfo(x.dtype)
    return (int(np.min(x, where=mask, initial=info.max)),
            int(np.max(x, where=mask, initial=info.min)))


class Buffer:
    """One array argument: its bytes, virtual base address and typed views."""

    def __init__(self, slot: int, name: str, array: np.ndarray, label: str | None = None) -> None:
        flags = array.flags
        address = array.__array_interface__["data"][0]
        if flags.c_contiguous and array.size:  # its bytes are a view of it (cheaper than _Raw's interface)
            lo = address
            hi = lo + array.nbytes
            raw = array.reshape(-1).view(np.uint8)
        else:
            lo, hi = _extent(array)
            raw = np.asarray(_Raw(lo, hi - lo, not flags.writeable, array))
        self.name = name
        self.label = f"argument '{name}'" if label is None else label
        self.live = label is not None  # found by address, not passed
        self.array = array
        self.nbytes = hi - lo
        self.writable = bool(flags.writeable)
        self.raw = raw
        self.base = (FIRST_SLOT + slot) << SHIFT
        self.host = (lo, hi)
        self.origin = self.base + address - lo
        self._views: dict[np.dtype, np.ndarray] = {}

    def view(self, dt: np.dtype) -> np.ndarray:
        v = self._views.get(dt)
        if v is None:
            n = self.nbytes // dt.itemsize
            v = self._views[dt] = self.raw[: n * dt.itemsize].view(dt)
        return v

    def describe(self) -> str:
        lo, hi = self.base - self.origin, self.base + self.nbytes - self.origin
        a = self.array
        return (f"{self.label} ({'x'.join(map(str, a.shape)) or 'scalar'} {a.dtype} "
                f"array; valid byte offsets [{lo}, {hi}))")


class Memory:
    """The buffers of one launch and the checked accesses to them."""

    def __init__(self, kernel: Kernel, args: list[Any], check_races: bool = False) -> None:
        self.kernel = kernel.name
        if len(args) != len(kernel.params):
            raise LaunchError(f"{kernel.name} takes {len(kernel.params)} arguments, got {len(args)}")
        self.buffers: list[Buffer] = []
        self.param_values: list[np.ndarray] = []
        for param, arg in zip(kernel.params, args):
            t = param.value.type
            if isinstance(t.dtype, PointerType):
                if not isinstance(arg, np.ndarray):
                    raise LaunchError(f"{kernel.name}: argument '{param.name}' must be a NumPy "
                                      f"array, got {type(arg).__name__}")
                buf = Buffer(len(self.buffers), param.name, arg)
                self.buffers.append(buf)
                self.param_values.append(np.array([buf.origin], np.int64))
            else:
                self.param_values.append(_scalar(arg, t.dtype))
        self.writers: dict[int, np.ndarray] | None = {} if check_races else None
        self.unresolved: Loc | None = None  # where a pointer was made from an unknown address
        self._by_size: list[Buffer] = []  # the buffers, largest first, and their host extents
        self._host_lo = self._host_hi = self._shift = np.zeros(0, np.int64)
        self._remembered_added = False
        self._live: LiveIndex | None = None  # every live host array, once a lookup needs it
        self._scratch: dict[tuple[int, ...], np.ndarray] = {}
        # offsets' bounds over (offsets, mask), for accesses that share them (``x[offs]``, ``y[offs]``,
        # ``out[offs]`` under one mask); holds the arrays, so their ids stay theirs.  Sound because the
        # walker never writes into a value after an instruction has read it (loops and branches
        # write only into fresh arrays of their own)
        self._bounds: dict[tuple[int, int], tuple[int, int, np.ndarray, np.ndarray | None]] = {}

    # ------------------------------------------------------------ locating lanes

    def _one_buffer(self, addr: np.ndarray, mask: np.ndarray | None, size: int) -> Buffer | None:
        """The buffer holding every active lane, all aligned; None: take the slow path.
        Tries every lane first (masked-off ones are usually in bounds too, and unmasked
        reductions are far cheaper), then only the active ones."""
        buf = self._holding_all(addr, None, size)
        if buf is None and mask is not None:
            buf = self._holding_all(addr, mask, size)
        return buf

    def _holding_all(self, addr: np.ndarray, mask: np.ndarray | None, size: int) -> Buffer | None:
        lo, hi = _min_max(addr, mask)
        k = (lo >> SHIFT) - FIRST_SLOT
        if not 0 <= k < len(self.buffers):
            return None
        buf = self.buffers[k]
        if lo < buf.base or hi + size > buf.base + buf.nbytes:
            return None
        if size > 1:  # buffers start 2**44-aligned: the low bits of every address must be 0
            if mask is None:
                low = np.bitwise_or.reduce(_one_copy(addr), axis=None)
            else:
                shape = broadcast_shape(addr.shape, mask.shape)
                low = np.bitwise_or.reduce(np.broadcast_to(addr, shape), axis=None,
                                           where=np.broadcast_to(mask, shape))
            if int(low) & (size - 1):
                return None
        return buf

    def _lanes(self, addr: np.ndarray, size: int, site: Site, program_of: np.ndarray
               ) -> list[tuple[Buffer, np.ndarray, np.ndarray]]:
        """Slow path over flat active addresses: [(buffer, selection, element index)]."""
        slot = ((addr + SPAN // 2) >> SHIFT) - FIRST_SLOT
        ok = np.zeros(addr.shape, np.bool_)
        groups = []
        for k in _distinct(slot):
            if not 0 <= k < len(self.buffers):
                continue
            buf = self.buffers[int(k)]
            sel = slot == k
            off = addr - buf.base
            good = sel & (off >= 0) & (off + size <= buf.nbytes) & (off % size == 0)
            ok |= good
            if good.any():
                groups.append((buf, good, off[good] >> _LOG2[size]))
        if not ok.all():
            j = int(np.argmin(ok))
            self._raise(site, int(program_of[j]), int(addr[j]), size)
        return groups

    def _scratch_like(self, shape: tuple[int, ...]) -> np.ndarray:
        """An int64 scratch array reused between accesses (fresh big arrays cost page faults)."""
        idx = self._scratch.get(shape)
        if idx is None:
            if len(self._scratch) > 8:
                self._scratch.clear()
            idx = self._scratch[shape] = np.empty(shape, np.int64)
        return idx

    def _index(self, addr: np.ndarray, base: int, size: int) -> np.ndarray:
        """Element indices of aligned addresses into a buffer's typed view (scratch memory)."""
        idx = self._scratch_like(addr.shape)
        np.subtract(addr, np.int64(base), out=idx)
        return np.right_shift(idx, _LOG2[size], out=idx) if size > 1 else idx

    def _raise(self, site: Site, program: int, addr: int, size: int) -> None:
        where = f"in kernel '{site.kernel}', {site.programs.describe(program)}"
        k = ((addr + SPAN // 2) >> SHIFT) - FIRST_SLOT
        if not 0 <= k < len(self.buffers) and 0 < addr < VIRTUAL and self.unresolved is not None:
            raise KernelRuntimeError(
                f"{site.what} {where}: address {addr:#x} is in no array: a pointer made from an "
                f"integer at {self.unresolved} (int_to_ptr / .to(tl.pointer_type(...))) must point "
                "into an array passed to the launch or a live NumPy array / CPU torch tensor; "
                "pass the array it points into as an extra argument (or keep it alive)", site.loc)
        if not 0 <= k < len(self.buffers):
            raise KernelRuntimeError(f"{site.what} {where}: address {addr:#x} points into no "
                                     "argument (invalid or null pointer)", site.loc)
        buf = self.buffers[k]
        off = addr - buf.origin
        inside = buf.base <= addr and addr + size <= buf.base + buf.nbytes
        problem = (f"of {buf.describe()} is not a multiple of the access size {size}" if inside
                   else f"(an access of {size} bytes) is out of bounds of {buf.describe()}")
        raise KernelRuntimeError(f"{site.what} {where}: byte offset {off} {problem}", site.loc)

    def _check_writable(self, buf: Buffer, site: Site) -> None:
        if not buf.writable:
            raise KernelRuntimeError(f"{site.what} in kernel '{site.kernel}': "
                                     f"{buf.describe()} is read-only", site.loc)

    # ------------------------------------------------------------ pointers from integers

    def resolve(self, addr: np.ndarray, loc: Loc) -> np.ndarray:
        """INT_TO_PTR: host addresses inside an array become virtual addresses into its buffer."""
        host = (addr > 0) & (addr < VIRTUAL)
        if not host.any():
            return addr
        out = addr.copy()
        todo = self._translate(addr, out, host)
        if todo.any() and not self._remembered_added:
            self._remembered_added = True
            self._add_live(remembered_arrays())
            todo = self._translate(addr, out, todo)
        if todo.any():
            if self._live is None:
                self._live = LiveIndex()
            self._add_live(self._live.holding(addr[todo]))
            todo = self._translate(addr, out, todo)
            if todo.any():
                self.unresolved = loc
        return out

    def _add_live(self, arrays: list[np.ndarray]) -> None:
        known = {b.host for b in self.buffers}
        for arr in arrays:
            lo, hi = _extent(arr)
            if (lo, hi) not in known and hi > lo:
                known.add((lo, hi))
                self.buffers.append(Buffer(len(self.buffers), f"0x{lo:x}", arr,
                                           f"live {type(arr).__name__} at {lo:#x} (not an argument)"))

    def _translate(self, addr: np.ndarray, out: np.ndarray, todo: np.ndarray) -> np.ndarray:
        """Writes the virtual address of each ``todo`` lane that lies in a buffer (an argument
        before a live array, then the largest; one past the end counts); returns the lanes left."""
        if len(self._by_size) != len(self.buffers):
            self._by_size = sorted(self.buffers, key=lambda b: (b.live, -b.nbytes))
            self._host_lo = np.array([b.host[0] for b in self._by_size], np.int64)
            self._host_hi = np.array([b.host[1] for b in self._by_size], np.int64)
            self._shift = np.array([b.base - b.host[0] for b in self._by_size], np.int64)
        lanes = np.flatnonzero(todo)
        a = addr.ravel()[lanes][:, None]
        holds = (a >= self._host_lo) & (a <= self._host_hi)
        first = holds.argmax(axis=1)
        found = holds[np.arange(lanes.size), first]
        out.ravel()[lanes[found]] = a[found, 0] + self._shift[first[found]]
        left = np.zeros_like(todo)
        left.ravel()[lanes[~found]] = True
        return left

    # ------------------------------------------------------------ accesses

    def _fast(self, addr: Pointers, mask: np.ndarray | None, size: int
              ) -> tuple[Buffer, np.ndarray | slice] | None:
        """(buffer, element indices shaped like the pointers) when every active lane is in
        one buffer and aligned; None: take the slow path.  Indices of masked-off lanes
        are garbage (the caller clips or drops them).  The indices live in scratch memory
        that the next access reuses.  A slice instead: every lane (masked-off ones too) is in
        the buffer and the pointers, in row-major order, are consecutive elements."""
        if isinstance(addr, DeferredPtr):
            found = self._fast_deferred(addr, mask, size)
            if found is not None:
                return found
            # its bases alone may leave the buffer where the mask is off (a tile's tail rows, as
            # ``X + rows[:, None] * stride`` masked by ``rows < M``): check the addresses themselves
            addr = addresses(addr)
        buf = self._one_buffer(addr, mask, size)
        return None if buf is None else (buf, self._index(addr, buf.base, size))

    def _fast_deferred(self, d: DeferredPtr, mask: np.ndarray | None, size: int
                       ) -> tuple[Buffer, np.ndarray | slice] | None:
        """The fast path for ``p + i`` with every base ``p`` in one buffer (``p`` is usually
        uniform per program, or per row of a 2D tile: far smaller than the pointer tile)."""
        p, i = _one_copy(d.p), d.i  # a broadcast base (one per program) is checked once
        if size != d.size:
            return None
        lo_b, hi_b = _min_max(p, None)
        k = (lo_b >> SHIFT) - FIRST_SLOT
        if not 0 <= k < len(self.buffers) or ((hi_b >> SHIFT) - FIRST_SLOT) != k:
            return None
        buf = self.buffers[k]
        if p.size == 1:
            if (lo_b - buf.base) % size:
                return None
            rel: np.ndarray | np.int64 = np.int64((lo_b - buf.base) // size)
        else:
            rel = p - buf.base
            if (rel % size).any():
                return None
            rel //= size
        # conservative: every base with every offset (the exact check is the slow path's);
        # all offsets first, as in _one_buffer, then only the active ones
        for m in (None, mask) if mask is not None else (None,):
            lo_i, hi_i = self._offset_bounds(i, m)
            if lo_b + lo_i * size >= buf.base and hi_b + hi_i * size + size <= buf.base + buf.nbytes:
                break
        else:
            return None
        if m is None and p.size == 1 and i.size >= _RUN_MIN and i.shape == d.shape:
            start = self._run_start(i, lo_i, hi_i)
            if start is not None:  # the offsets are start, start + 1, ...: one slice of the buffer
                first = int(rel) + start
                return buf, slice(first, first + i.size)
        idx = self._scratch_like(d.shape)
        np.add(i, rel, out=idx, dtype=np.int64, casting="unsafe")
        return buf, idx

    def _run_start(self, i: np.ndarray, lo: int, hi: int) -> int | None:
        """``lo`` when the values of ``i``, in row-major order, are ``lo, lo + 1, ..., hi`` (a tile
        of consecutive elements: ``pid * BLOCK + arange``), else None; found once per launch for
        an array (as ``_offset_bounds``).  (Differences of 1 that wrapped around would span the
        whole integer range, so ``hi - lo + 1`` would not be the size.)"""
        if hi - lo + 1 != i.size:
            return None
        key = (id(i), 1)
        hit = self._bounds.get(key)
        if hit is None or hit[2] is not i:
            flat = i.reshape(-1)
            run = int(flat[0]) == lo and bool((flat[1:] - flat[:-1] == 1).all())
            if len(self._bounds) >= 8:
                self._bounds.clear()
            hit = self._bounds[key] = (int(run), 0, i, None)
        return lo if hit[0] else None

    def _offset_bounds(self, i: np.ndarray, mask: np.ndarray | None) -> tuple[int, int]:
        """``_min_max(i, mask)``, found once per launch for a pair of arrays."""
        key = (id(i), id(mask))
        hit = self._bounds.get(key)
        if hit is not None and hit[2] is i and hit[3] is mask:
            return hit[0], hit[1]
        lo, hi = _min_max(i, mask)
        if len(self._bounds) >= 8:  # (a loop makes new offsets each iteration: keep only the latest)
            self._bounds.clear()
        self._bounds[key] = (lo, hi, i, mask)
        return lo, hi

    def _mask_facts(self, mask: np.ndarray) -> tuple[bool, bool]:
        """(every lane on, some lane on), found once per launch for a mask (as ``_offset_bounds``)."""
        key = (id(mask), 0)
        hit = self._bounds.get(key)
        if hit is not None and hit[2] is mask:
            return bool(hit[0]), bool(hit[1])
        every = bool(mask.all())
        some = every or bool(mask.any())
        if len(self._bounds) >= 8:
            self._bounds.clear()
        self._bounds[key] = (every, some, mask, None)
        return every, some

    def load(self, addr: Pointers, mask: np.ndarray | None, other: np.ndarray | None,
             elem: DType | PointerType, site: Site) -> np.ndarray:
        vdt = view_dtype(elem)
        out_dt = np.dtype(np.bool_) if isinstance(elem, DType) and elem.is_bool else vdt
        if mask is not None:
            every, some = self._mask_facts(mask)
            if every:
                mask = None
            elif not some:
                shape = broadcast_shape(addr.shape, mask.shape)
                if other is None:
                    return np.zeros(shape, out_dt)
                return np.broadcast_to(other, broadcast_shape(shape, other.shape))
        size = vdt.itemsize
        found = self._fast(addr, mask, size)
        if found is not None:
            buf, idx = found
            if isinstance(idx, slice):  # copied: a loaded value never changes with later stores
                vals = buf.view(vdt)[idx].reshape(addr.shape).copy()
            else:
                vals = buf.view(vdt).take(idx, mode="clip")
        else:
            a = addresses(addr)
            shape = a.shape if mask is None else broadcast_shape(a.shape, mask.shape)
            flat = np.broadcast_to(a, shape).ravel()
            act = np.arange(flat.size) if mask is None else np.flatnonzero(np.broadcast_to(mask, shape))
            lanes = max(1, int(np.prod(shape[1:])))
            out = np.zeros(flat.size, vdt)
            for b, sel, ix in self._lanes(flat[act], size, site, act // lanes):
                out[act[sel]] = b.view(vdt).take(ix)
            vals = out.reshape(shape)
        if out_dt != vdt:
            vals = vals != 0
        if mask is None:
            return vals
        return np.where(mask, vals, np.zeros((), out_dt) if other is None else other)

    def store(self, addr: Pointers, value: np.ndarray, mask: np.ndarray | None,
              elem: DType | PointerType, site: Site) -> None:
        vdt = view_dtype(elem)
        size = vdt.itemsize
        if mask is not None:
            every, some = self._mask_facts(mask)
            if every:
                mask = None
            elif not some:
                return
        if value.dtype != vdt:
            value = value.astype(vdt)
        races = self.writers is not None
        found = None if races else self._fast(addr, mask, size)
        if found is not None:
            buf, idx = found
            self._check_writable(buf, site)
            if isinstance(idx, slice):
                tile = addr.shape
                if mask is None and (tile[0] > 1 or value.shape[0] == 1) \
                        and broadcast_shape(tile, value.shape) == tile:
                    buf.view(vdt)[idx] = _to_shape(value, tile).reshape(-1)  # distinct elements, in order
                    return
                idx = np.arange(idx.start, idx.stop, dtype=np.int64).reshape(tile)
            if idx.shape[0] == 1 and (mask is None or mask.shape[0] == 1):
                value = value[-1:]  # every program writes the same lanes: the last one wins
            shape = broadcast_shape(idx.shape, value.shape)
            if mask is not None:
                shape = broadcast_shape(shape, mask.shape)
            idx, v = _to_shape(idx, shape), _to_shape(value, shape)
            if mask is None:
                buf.view(vdt)[idx.ravel()] = v.ravel()  # 1-D index: in order, the last wins
            else:
                m = _to_shape(mask, shape)
                buf.view(vdt)[idx[m]] = v[m]
            return
        a = addresses(addr)
        lead = site.programs.P if races else max(a.shape[0], value.shape[0],
                                                 1 if mask is None else mask.shape[0])
        shape = (lead, *a.shape[1:])
        flat, vflat = np.broadcast_to(a, shape).ravel(), np.broadcast_to(value, shape).ravel()
        act = np.arange(flat.size) if mask is None else np.flatnonzero(np.broadcast_to(mask, shape))
        lanes = max(1, int(np.prod(shape[1:])))
        for b, sel, ix in self._lanes(flat[act], size, site, act // lanes):
            self._check_writable(b, site)
            if races:
                self._check_races(b, ix, size, (act // lanes)[sel], site)
            b.view(vdt)[ix] = vflat[act[sel]]

    def atomic(self, kind: str, addr: Pointers, value: np.ndarray, cmp: np.ndarray | None,
               mask: np.ndarray | None, elem: DType, used: bool, site: Site) -> np.ndarray:
        """Atomics of every program of the set, applied in (program, lane) order."""
        a = addresses(addr)
        n = site.programs.P
        shape = (n, *a.shape[1:])
        lanes = max(1, int(np.prod(shape[1:])))
        bitwise = kind in ("xchg", "cas")
        vdt = view_dtype(elem)
        udt = np.dtype(f"u{vdt.itemsize}")
        result = np.zeros(n * lanes, vdt)
        flat = np.broadcast_to(a, shape).ravel()
        act = np.arange(flat.size) if mask is None else np.flatnonzero(np.broadcast_to(mask, shape))
        if act.size == 0:
            return result.reshape(shape)
        vals = np.broadcast_to(value.astype(vdt, copy=False), shape).ravel()[act]
        cmps = None if cmp is None else np.broadcast_to(cmp.astype(vdt, copy=False), shape).ravel()[act]
        if bitwise:
            vals = vals.view(udt)
            cmps = None if cmps is None else cmps.view(udt)
        for b, sel, idx in self._lanes(flat[act], vdt.itemsize, site, act // lanes):
            self._check_writable(b, site)
            view = b.view(udt if bitwise else vdt)
            old = atomics.apply(kind, view, idx, vals[sel], None if cmps is None else cmps[sel],
                                used)
            if old is not None:
                result[act[sel]] = old.view(vdt) if bitwise else old
        out = result.reshape(shape)
        return out != 0 if elem.is_bool else out

    # ------------------------------------------------------------ race checking

    def _check_races(self, buf: Buffer, idx: np.ndarray, size: int, progs: np.ndarray,
                     site: Site) -> None:
        """TILES_INTERPRET_CHECKS=races: two programs of a launch storing to one address."""
        assert self.writers is not None
        writer = self.writers.get(id(buf))
        if writer is None:
            writer = self.writers[id(buf)] = np.full(buf.nbytes, -1, np.int64)
        lin = site.programs.linear[progs]
        byte = (idx << _LOG2[size])
        prev = writer[byte]
        writer[byte] = lin
        clash = ((prev >= 0) & (prev != lin)) | (writer[byte] != lin)
        if clash.any():
            j = int(np.argmax(clash))
            if prev[j] >= 0 and prev[j] != lin[j]:
                first, second = int(prev[j]), int(lin[j])
            else:  # two programs of this very store
                first = int(lin[j])
                second = int(lin[np.flatnonzero((byte == byte[j]) & (lin != first))[0]])
            gx, gy, _ = site.programs.grid
            a, b = ((p % gx, (p // gx) % gy, p // (gx * gy)) for p in (first, second))
            raise KernelRuntimeError(
                f"data race in kernel '{site.kernel}': program {a} and program {b} both store to "
                f"byte offset {int(byte[j]) + buf.base - buf.origin} of argument '{buf.name}' "
                "(TILES_INTERPRET_CHECKS=races)", site.loc)


# (dtype, the argument's type, an int's value or a float's bits: -0.0 == 0.0) -> its read-only
# array: a launch's scalar arguments are mostly the ones of the launch before
_SCALARS: dict[tuple[Any, type, Any], np.ndarray] = {}


def _scalar(value: Any, dtype: Any) -> np.ndarray:
    """A non-pointer argument as a uniform (1,) array of its parameter type (read-only)."""
    t = type(value)
    key = (dtype, t, value if t is int or t is bool else struct.pack("<d", value)) if t in _KEPT else None
    found = None if key is None else _SCALARS.get(key)
    if found is None:
        found = constant(value, dtype)
        found.flags.writeable = False
        if key is not None and len(_SCALARS) < 4096:
            _SCALARS[key] = found
    return found


_KEPT = frozenset({int, bool, float})
