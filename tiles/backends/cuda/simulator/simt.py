"""A numpy SIMT simulator of the lowering's emitter contract, tensor-core calls included.

Every handle holds one value per thread of the program (a numpy array); warp-wide
calls (``ldmatrix``, ``stmatrix``, ``mma``, ``shuffle_xor``, ``shuffle_index``) act on each group of 32 threads as
PTX specifies.  Threads run in lock step, so barriers are no-ops.  It lets the
tensor-core lowering (fragment layouts, MMA operand repacking, row reductions) be
checked numerically without a GPU: ``run(kernel_ir, args, grid, threads)``.

Hopper ``wgmma`` is modelled asynchronously: ``wgmma`` returns output handles that cannot
be read (a clear ``RuntimeError``) until a ``wgmma_wait`` completes their group, and the
shared-memory operands are read when the op completes, so a kernel that overwrites a
buffer a pending wgmma still reads gets wrong answers here as on the GPU.  ``cp.async`` copies
land at once (the earliest the hardware may write them) but their bytes count as in flight
until a ``cp_async_wait`` retires their group: reading them before (a local load, ``ldmatrix``,
a wgmma issued on them) or writing them with a local store raises ``RuntimeError``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....core import dtypes as D  # noqa: N812
from ....core import semantics
from ....core.dtypes import DType, PointerType
from ....core.ir import TileType
from ....core.ops import COMPARISON, Op
from ....interp import atomics
from ...base import CodegenChoices, Options, Target
from ...lowering.entry import lower_with_tensor_cores
from ...lowering.mma import TensorCoreEmitter
from ..choices import applicable
from ..hopper.extension import HOPPER

WARP = 32


class H:
    """A per-thread value (identity equality, like an SSA register)."""
    __slots__ = ("v",)

    def __init__(self, v: np.ndarray) -> None:
        self.v = v


class _WGMMA:
    """One issued wgmma: its inputs as captured at issue time, its outputs once completed."""

    def __init__(self, n: int, k: int, dtype: DType, a: np.ndarray | list[np.ndarray], b: np.ndarray,
                 acc: list[Any], trans_a: bool, trans_b: bool) -> None:
        self.n, self.k, self.dtype, self.a, self.b, self.acc = n, k, dtype, a, b, acc
        self.trans_a, self.trans_b = trans_a, trans_b
        self.out: list[np.ndarray] | None = None


class _Pending(H):
    """Output register ``index`` of an issued wgmma: readable only once a wgmma_wait completed it."""
    __slots__ = ("op", "index")

    def __init__(self, op: _WGMMA, index: int) -> None:
        self.op, self.index = op, index

    @property  # type: ignore[override]
    def v(self) -> np.ndarray:
        if self.op.out is None:
            raise RuntimeError(f"read of wgmma m64n{self.op.n}k{self.op.k} result register {self.index} "
                               "before a wgmma_wait completed its group")
        return self.op.out[self.index]

    @v.setter
    def v(self, value: np.ndarray) -> None:
        raise RuntimeError("wgmma result registers are written by the tensor core only")


def _np(dtype: Any) -> Any:
    if isinstance(dtype, PointerType):
        return np.int64
    if dtype.is_bool:
        return np.bool_
    return D._NUMPY[dtype.name]


class _Attrs:
    """The attributes ``semantics.apply`` reads of an op the emitter contract passes as arguments."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class SimEmitter(TensorCoreEmitter):
    def __init__(self, args: Sequence[Any], pid: tuple[int, int, int], grid: tuple[int, int, int],
                 mem: np.ndarray) -> None:
        self.target = Target("cuda", arch="sm_90", warp_size=WARP)
        self.args, self.pid, self.grid, self.mem = args, pid, grid, mem
        self.smem = np.zeros(256 * 1024, np.uint8)
        self.active: list[np.ndarray] = []
        self.wg_open: list[_WGMMA] = []  # issued, not yet committed
        self.wg_groups: list[list[_WGMMA]] = []  # committed and not yet completed, oldest first
        self.in_flight = np.zeros(len(self.smem), np.int32)  # cp.async copies not yet waited for, per byte
        self.cp_open: list[tuple[int, int]] = []  # (byte, count) of copies issued, not yet committed
        self.cp_groups: list[list[tuple[int, int]]] = []  # committed, not yet waited for, oldest first

    def _settled(self, addrs: np.ndarray, what: str) -> None:
        """``addrs`` (byte addresses of local memory) hold no cp.async data still in flight."""
        if self.in_flight[addrs].any():
            raise RuntimeError(f"{what} touches local memory a cp.async group not yet waited for writes")

    def _h(self, v: Any, dtype: Any = None) -> H:
        arr = np.asarray(v)
        if dtype is not None:
            arr = arr.astype(_np(dtype), copy=False)
        if arr.ndim == 0:
            arr = np.full(self.threads, arr)
        return H(arr)

    def _mask(self, mask: H | None) -> np.ndarray:
        m = np.ones(self.threads, bool) if mask is None else mask.v.astype(bool)
        for a in self.active:
            m = m & a
        return m

    # frame
    def begin_kernel(self, name: str, params: Sequence[tuple[str, Any]], threads: int) -> list[Any]:
        self.threads = threads
        self.present = np.ones(threads, bool)  # threads that have not left the kernel
        return [self._h(a, dt) for a, (_n, dt) in zip(self.args, params)]

    def finish(self, local_bytes: int) -> Any:
        self.local_bytes = local_bytes
        return None

    def constant(self, value: Any, dtype: DType) -> H:
        if isinstance(dtype, PointerType):
            return self._h(np.int64(value))
        return self._h(semantics.constant(value, dtype)[0])

    def thread_id(self) -> H:
        return H(np.arange(self.threads, dtype=np.int32))

    def program_id(self, axis: int) -> H:
        return self._h(np.int32(self.pid[axis]))

    def num_programs(self, axis: int) -> H:
        return self._h(np.int32(self.grid[axis]))

    # arithmetic: the IR's elementwise semantics (core/semantics.py), exactly as the interpreter has them
    def _apply(self, op: Op, attrs: Any, args: Sequence[H], dtype: Any) -> H:
        return H(semantics.apply(op, attrs, [a.v for a in args], TileType(dtype)))

    def binary(self, op: Op, a: H, b: H, dtype: Any) -> H:
        out = D.int1 if op in COMPARISON else dtype
        return self._apply(op, None, [a, b], out)

    def unary(self, op: Op, a: H, dtype: DType) -> H:
        return self._apply(op, None, [a], D.int1 if op is Op.ISNAN else dtype)

    def math_fn(self, fn: Any, args: Sequence[H], dtypes: Sequence[DType]) -> H:
        return self._apply(Op.MATH_FN, _Attrs(name=fn.name), args, fn.result_dtype(dtypes[0]))

    def fma(self, a: H, b: H, c: H, dtype: DType) -> H:
        return self._apply(Op.FMA, None, [a, b, c], dtype)

    def cast(self, a: H, src: DType, dst: DType, rounding: str = "rtne") -> H:
        return H(semantics.convert(a.v, dst, rounding))

    def bitcast(self, a: H, src: Any, dst: Any) -> H:
        return H(a.v.view(_np(dst)))

    def select(self, c: H, a: H, b: H, dtype: Any) -> H:
        return H(np.where(c.v, a.v, b.v))

    # pointers / global memory (addresses are byte offsets into ``mem``)
    def ptr_offset(self, p: H, offset: H, ptr: PointerType, offset_dtype: DType) -> H:
        return H(p.v + offset.v.astype(np.int64) * ptr.element.itemsize)

    def ptr_to_int(self, p: H, ptr: PointerType) -> H:
        return p

    def int_to_ptr(self, a: H, ptr: PointerType) -> H:
        return H(a.v.astype(np.int64))

    @staticmethod
    def _elements(buf: np.ndarray, addr: np.ndarray, nd: np.dtype) -> np.ndarray | None:
        """Element indices of ``addr`` in ``buf`` viewed as ``nd``, checked in bounds; None when an
        address is not a multiple of the element size (then the bytes are moved one at a time)."""
        a = addr.astype(np.int64)
        assert a.size == 0 or (a.min() >= 0 and a.max() <= len(buf) - nd.itemsize), (a.min(), a.max(), len(buf))
        return None if (a % nd.itemsize).any() else a // nd.itemsize

    def _read(self, buf: np.ndarray, addr: np.ndarray, dtype: Any, ok: np.ndarray) -> np.ndarray:
        nd = np.dtype(_np(dtype))
        out = np.zeros(self.threads, nd)
        act = np.nonzero(ok)[0]
        idx = self._elements(buf, addr[act], nd)
        if idx is not None:
            out[act] = buf.view(nd)[idx]
            return out
        for t in act:
            out[t] = buf[addr[t]:addr[t] + nd.itemsize].view(nd)[0]
        return out

    def _write(self, buf: np.ndarray, addr: np.ndarray, val: np.ndarray, dtype: Any, ok: np.ndarray) -> None:
        """Threads write in thread order: where two write one address, the last thread's value stays."""
        nd = np.dtype(_np(dtype))
        act = np.nonzero(ok)[0]
        idx = self._elements(buf, addr[act], nd)
        if idx is not None:
            buf.view(nd)[idx] = val[act].astype(nd, copy=False)  # numpy assigns in order: the last one stays
            return
        for t in act:
            buf[addr[t]:addr[t] + nd.itemsize] = np.array([val[t]], nd).view(np.uint8)

    def load(self, p: H, dtype: DType, mask: H | None, other: H | None) -> H:
        ok = self._mask(mask) if mask is not None else np.ones(self.threads, bool)
        v = self._read(self.mem, p.v, dtype, ok)
        if other is not None:
            v = np.where(ok, v, other.v.astype(v.dtype))
        return H(v)

    def _aligned(self, p: H, nbytes: int, mask: H | None) -> None:
        """A vector access (or ``cp.async``) of ``nbytes`` needs an address that is a multiple of it
        on the GPU: a wrong divisibility fact shows here as the misaligned address it faults on."""
        ok = self._mask(mask)
        bad = np.nonzero(ok & (p.v.astype(np.int64) % nbytes != 0))[0]
        assert not len(bad), f"misaligned {nbytes}-byte access: thread {bad[0]} at {int(p.v[bad[0]])}"

    def load_vector(self, p: H, dtype: DType, width: int, mask: H | None, others: Any) -> list[Any]:
        s = dtype.itemsize
        self._aligned(p, width * s, mask)
        return [self.load(H(p.v + i * s), dtype, mask, None if others is None else others[i])
                for i in range(width)]

    def store(self, p: H, value: H, dtype: DType, mask: H | None) -> None:
        self._write(self.mem, p.v, value.v, dtype, self._mask(mask))

    def store_vector(self, p: H, values: Sequence[Any], dtype: DType, mask: H | None) -> None:
        self._aligned(p, len(values) * dtype.itemsize, mask)
        for i, v in enumerate(values):
            self.store(H(p.v + i * dtype.itemsize), v, dtype, mask)

    def _atomic(self, kind: str, p: H, value: H, cmp: H | None, dtype: DType, mask: H | None) -> H:
        """Thread by thread, in thread order (one order the hardware may pick), by the interpreter's rules."""
        ok = self._mask(mask)
        nd = np.dtype(_np(dtype))
        bitwise = kind in ("xchg", "cas")
        view_as = np.dtype(f"u{nd.itemsize}") if bitwise else nd
        old = np.zeros(self.threads, nd)
        act = np.nonzero(ok)[0]
        if len(act):
            idx = self._elements(self.mem, p.v[act], nd)
            assert idx is not None, "misaligned atomic"
            vals = value.v[act].astype(nd).view(view_as) if bitwise else value.v[act].astype(nd)
            cmps = None if cmp is None else cmp.v[act].astype(nd).view(view_as)
            got = atomics.apply(kind, self.mem.view(view_as), idx, vals, cmps, True)
            assert got is not None
            old[act] = got.view(nd)
        return H(old != 0 if dtype.is_bool else old)

    def atomic_rmw(self, kind: str, p: H, value: H, dtype: DType, mask: H | None, loc: Any,
                   sem: str = "acq_rel", scope: str = "gpu") -> H:
        return self._atomic(kind, p, value, None, dtype, mask)

    def atomic_cas(self, p: H, cmp: H, value: H, dtype: DType, mask: H | None, loc: Any,
                   sem: str = "acq_rel", scope: str = "gpu") -> H:
        return self._atomic("cas", p, value, cmp, dtype, mask)

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return width in (2, 4, 8)

    def shuffle_xor(self, value: H, lane_mask: int, dtype: Any) -> H:
        return H(value.v[np.arange(self.threads) ^ lane_mask])

    def shuffle_index(self, value: H, lane: H, dtype: Any) -> H:
        src = np.broadcast_to(np.asarray(lane.v, np.int64), (self.threads,))
        assert ((src >= 0) & (src < WARP)).all(), "indexed shuffle outside the warp"
        return H(value.v[np.arange(self.threads) // WARP * WARP + src])

    # local memory
    def local_itemsize(self, dtype: Any) -> int:
        return 8 if isinstance(dtype, PointerType) else max(1, dtype.itemsize)

    def _laddr(self, byte_offset: int, index: H, dtype: Any) -> np.ndarray:
        return self.local_base + byte_offset + index.v.astype(np.int64) * self.local_itemsize(dtype)

    def _span(self, addr: np.ndarray, nbytes: int, ok: np.ndarray) -> np.ndarray:
        return (addr[ok][:, None] + np.arange(nbytes)).reshape(-1)

    def local_load(self, byte_offset: int, index: H, dtype: Any) -> H:
        ok = np.ones(self.threads, bool)
        addr = self._laddr(byte_offset, index, dtype)
        self._settled(self._span(addr, self.local_itemsize(dtype), ok), "a local load")
        return H(self._read(self.smem, self._laddr(byte_offset, index, dtype), dtype, ok))

    def local_store(self, byte_offset: int, index: H, value: H, dtype: Any, mask: H | None) -> None:
        addr = self._laddr(byte_offset, index, dtype)
        self._settled(self._span(addr, self.local_itemsize(dtype), self._mask(mask)), "a local store")
        self._write(self.smem, self._laddr(byte_offset, index, dtype), value.v, dtype, self._mask(mask))

    def barrier(self) -> None:
        pass

    # tensor cores: mma.sync fp16 -> fp32; with wgmma also tf32, 8-bit ints and fp8
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> Any:
        from ..mma_ops import mma_tile_shape  # the CUDA emitter's choice, so the lowering takes the same path
        return mma_tile_shape(self.target.arch, in_dtype, acc_dtype, input_precision)

    def mma(self, shape: Any, a: Sequence[Any], b: Sequence[Any], c: Sequence[Any], in_dtype: DType) -> list[Any]:
        """mma.sync m16n8k{32 bytes of k}: 16-bit, tf32 or 8-bit integer operands, float32 or int32 C."""
        m, n, k = shape
        assert (m, n) == (16, 8) and k * in_dtype.itemsize == 32, shape
        acc = np.int32 if in_dtype.is_int else np.float32
        outs = [np.zeros(self.threads, acc) for _ in range(4)]
        lane = np.arange(WARP)
        g, q = lane // 4, lane % 4
        for w in range(self.threads // WARP):
            t = w * WARP + lane
            fa = self._frag_a([r.v for r in a], w * WARP, in_dtype)
            fb = self._frag_b([r.v for r in b], w * WARP, in_dtype)
            fc = np.zeros((16, 8), np.int64 if in_dtype.is_int else np.float64)
            for i in range(4):
                fc[g + 8 * (i // 2), 2 * q + i % 2] = c[i].v[t]
            if in_dtype.is_int:
                fd = fa.astype(np.int64) @ fb.astype(np.int64) + fc
                fd = fd.astype(np.int32)  # wraps like the hardware
            else:
                fa32, fb32 = fa.astype(np.float32), fb.astype(np.float32)
                if in_dtype.name == "float32":  # tf32: the low 13 mantissa bits are not used
                    fa32, fb32 = ((x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32) for x in (fa32, fb32))
                fd = (fa32.astype(np.float64) @ fb32.astype(np.float64) + fc).astype(np.float32)
            for i in range(4):
                outs[i][t] = fd[g + 8 * (i // 2), 2 * q + i % 2]
        return [H(o) for o in outs]

    @staticmethod
    def _packed(reg: np.ndarray, t0: int, dtype: DType) -> np.ndarray:
        """The elements of ``dtype`` packed in one 32-bit register of each lane of the warp whose
        lane 0 is thread t0: (32, 4 // itemsize), low bytes first."""
        word = np.ascontiguousarray(np.asarray(reg)[t0:t0 + WARP])
        assert word.dtype.itemsize == 4, word.dtype
        return word.view(np.uint8).reshape(WARP, 4).view(dtype.np)

    @staticmethod
    def _frag_b(regs: Sequence[np.ndarray], t0: int, dtype: DType) -> np.ndarray:
        """The k x 8 B operand held as an mma.sync B fragment by the 2 registers of the warp
        whose lane 0 is thread t0 (k * itemsize == 32 bytes)."""
        per, k = 4 // dtype.itemsize, 32 // dtype.itemsize
        out = np.zeros((k, 8), dtype.np)
        lane = np.arange(WARP)
        for j, r in enumerate(regs):
            vals = SimEmitter._packed(r, t0, dtype)
            rows = per * (lane % 4) + (k // 2) * j
            for e in range(per):
                out[rows + e, lane // 4] = vals[:, e]
        return out

    @staticmethod
    def _frag_a(regs: Sequence[np.ndarray], t0: int, dtype: DType) -> np.ndarray:
        """The 16 x k A operand (k * itemsize == 32 bytes) held as an mma.sync A fragment
        (m16n8k16 for 16-bit types) by the 4 registers of the warp whose lane 0 is thread t0."""
        s = dtype.itemsize
        per, k = 4 // s, 32 // s
        out = np.zeros((16, k), dtype.np)
        lane = np.arange(WARP)
        for i, r in enumerate(regs):
            vals = SimEmitter._packed(r, t0, dtype)
            rows = lane // 4 + 8 * (i % 2)
            cols = per * (lane % 4) + (k // 2) * (i // 2)
            for e in range(per):
                out[rows, cols + e] = vals[:, e]
        return out

    def _warps(self) -> list[int]:
        """The warps still in the kernel (warp-wide instructions run in these)."""
        return [w for w in range(self.threads // WARP) if self.present[w * WARP:(w + 1) * WARP].all()]

    def ldmatrix(self, byte_offset: int, byte_index: H, count: int, trans: bool) -> list[Any]:
        regs = [np.zeros(self.threads, np.uint32) for _ in range(count)]
        for w in self._warps():
            for i in range(count):
                mat = np.zeros((8, 8), np.uint16)
                for r in range(8):
                    at = self.local_base + byte_offset + int(byte_index.v[w * WARP + 8 * i + r])
                    assert at % 16 == 0, at
                    self._settled(np.arange(at, at + 16), "ldmatrix")
                    mat[r] = self.smem[at:at + 16].view(np.uint16)
                if trans:
                    mat = mat.T
                for lane in range(WARP):
                    g, q = lane // 4, lane % 4
                    regs[i][w * WARP + lane] = int(mat[g, 2 * q]) | (int(mat[g, 2 * q + 1]) << 16)
        return [H(r.view(np.int32)) for r in regs]

    def stmatrix_ok(self) -> bool:
        return True

    def stmatrix(self, byte_offset: int, byte_index: H, regs: Sequence[Any], trans: bool = False) -> None:
        # PTX ISA, stmatrix .m8n8 .b16: matrix i is stored from register i of every lane; lanes
        # 8i..8i+7 give the addresses of its rows 0..7 as stored (16 bytes each, 16-byte aligned;
        # lanes past 8 * count give none); lane l's register holds row l // 4, columns 2 * (l % 4)
        # (low 16 bits) and 2 * (l % 4) + 1 (high 16 bits): the mma accumulator layout, packed in
        # pairs; .trans stores each matrix column-major (stored row r is the matrix's column r)
        assert len(regs) in (1, 2, 4), len(regs)
        assert (self._mask(None) == self.present).all(), "stmatrix under a condition: all lanes execute it"
        for w in self._warps():
            for i, reg in enumerate(regs):
                words = reg.v[w * WARP:(w + 1) * WARP].astype(np.uint32)  # int32 handles: same bits
                mat = np.zeros((8, 8), np.uint16)
                for lane in range(WARP):
                    g, q = lane // 4, lane % 4
                    mat[g, 2 * q], mat[g, 2 * q + 1] = words[lane] & 0xFFFF, words[lane] >> 16
                if trans:
                    mat = np.ascontiguousarray(mat.T)
                for r in range(8):
                    at = self.local_base + byte_offset + int(byte_index.v[w * WARP + 8 * i + r])
                    assert at % 16 == 0 and 0 <= at <= len(self.smem) - 16, at
                    self._settled(np.arange(at, at + 16), "stmatrix")
                    self.smem[at:at + 16] = mat[r].view(np.uint8)

    def cp_async(self, byte_offset: int, byte_index: H, p: H, nbytes: int, mask: H | None) -> bool:
        self._aligned(p, nbytes, mask)
        ok = self._mask(mask)
        for t in np.nonzero(self.present)[0]:
            at = self.local_base + byte_offset + int(byte_index.v[t])
            src = self.mem[p.v[t]:p.v[t] + nbytes] if ok[t] else np.zeros(nbytes, np.uint8)
            self.smem[at:at + nbytes] = src
            self.in_flight[at:at + nbytes] += 1
            self.cp_open.append((at, nbytes))
        return True

    def cp_async_commit(self) -> None:
        self.cp_groups.append(self.cp_open)
        self.cp_open = []

    def cp_async_wait(self, pending: int) -> None:
        while len(self.cp_groups) > pending:
            for at, nbytes in self.cp_groups.pop(0):
                self.in_flight[at:at + nbytes] -= 1

    # Hopper warpgroup MMA (smem base address is 0: a shared address is the byte offset)
    def wgmma_ok(self) -> bool:
        return True

    def shared_address(self, byte_offset: int) -> H:
        return self._h(np.int32(self.local_base + byte_offset))

    def fence_async_shared(self) -> None:
        pass

    def wgmma_fence(self) -> None:
        pass

    def wgmma(self, n: int, k: int, a: H | Sequence[H], b_desc: H, acc: Sequence[H], in_dtype: DType,
              trans_a: bool, trans_b: bool) -> list[H]:
        assert self.threads % 128 == 0, f"wgmma needs whole warpgroups, got {self.threads} threads"
        assert 8 <= n <= 256 and n % 8 == 0, n
        assert k * in_dtype.itemsize == 32, (k, in_dtype)
        assert len(acc) == n // 2, (len(acc), n)
        if isinstance(a, H):
            a_in: np.ndarray | list[np.ndarray] = np.array(a.v)
        else:
            assert len(a) == 4 and not trans_a, "A from registers: 4 registers, K-major"
            a_in = [np.array(r.v) for r in a]
        # pending outputs of earlier wgmmas are kept as handles: they complete first
        acc_in = [c if isinstance(c, _Pending) else np.array(c.v) for c in acc]
        op = _WGMMA(n, k, in_dtype, a_in, np.array(b_desc.v), acc_in, trans_a, trans_b)
        for g in self._warpgroups():  # its operands must have landed when it is issued
            reads = [self._operand_addresses(self._desc(op.b, g), n, k, in_dtype, trans_b)]
            if isinstance(a_in, np.ndarray):
                reads.append(self._operand_addresses(self._desc(a_in, g), 64, k, in_dtype, trans_a))
            for at in reads:
                self._settled((at.reshape(-1)[:, None] + np.arange(in_dtype.itemsize)).reshape(-1), "a wgmma")
        self.wg_open.append(op)
        return [_Pending(op, i) for i in range(n // 2)]

    def wgmma_commit(self) -> None:
        self.wg_groups.append(self.wg_open)  # with nothing issued this commits an empty group, as PTX does
        self.wg_open = []

    def wgmma_wait(self, pending: int, regs: Sequence[H]) -> list[H]:
        while len(self.wg_groups) > pending:
            for op in self.wg_groups.pop(0):
                self._wgmma_complete(op)
        return [H(r.v) if isinstance(r, _Pending) and r.op.out is not None else r for r in regs]

    def _warpgroups(self) -> list[int]:
        """The warpgroups running here (a producer warpgroup's threads have left, tma.py)."""
        return [g for g in range(self.threads // 128) if self.present[128 * g:128 * g + 128].all()]

    def _desc(self, vals: np.ndarray, g: int) -> int:
        ws = [int(x) & 0xFFFF_FFFF_FFFF_FFFF for x in vals[128 * g:128 * g + 128]]
        assert len(set(ws)) == 1, f"warpgroup {g}: descriptor differs between threads"
        return ws[0]

    def _wgmma_operand(self, desc: int, rows: int, k: int, dtype: DType, mn_major: bool) -> np.ndarray:
        """The rows x k operand (A, or B transposed) a descriptor points at, read from smem now."""
        phys = self._operand_addresses(desc, rows, k, dtype, mn_major)
        raw = np.ascontiguousarray(self.smem[phys[..., None] + np.arange(dtype.itemsize)])
        return raw.view(dtype.np).reshape(rows, k)

    def _operand_addresses(self, desc: int, rows: int, k: int, dtype: DType, mn_major: bool) -> np.ndarray:
        """The byte address of each element of the rows x k operand a descriptor points at."""
        start, lbo, sbo = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
        mode = desc >> 62
        if mode == 0:
            raise NotImplementedError("wgmma descriptor without swizzle (interleave mode)")
        width = {1: 128, 2: 64, 3: 32}[mode]
        s = dtype.itemsize
        r, kk = np.arange(rows)[:, None], np.arange(k)[None, :]
        if mn_major:
            if s != 2:
                raise NotImplementedError(f"MN-major wgmma operand of {dtype}")
            per = width // s
            x = start + (r // per) * lbo + (kk // 8) * sbo + (kk % 8) * width + (r % per) * s
        else:
            x = start + (r // 8) * sbo + (r % 8) * width + kk * s
        phys = x ^ (((x >> 7) & (width // 16 - 1)) << 4)
        assert phys.min() >= 0 and phys.max() + s <= len(self.smem), (phys.min(), phys.max())
        return phys

    def _wgmma_complete(self, op: _WGMMA) -> None:
        n, k, dt = op.n, op.k, op.dtype
        acc_np = np.int32 if dt.is_int else np.float32
        accs = np.stack([np.asarray(c.v if isinstance(c, _Pending) else c) for c in op.acc])  # (n/2, threads)
        t = np.arange(128)
        w, lane = t // 32, t % 32
        i = np.arange(n // 2)[:, None]
        rows = 16 * w + lane // 4 + 8 * ((i % 4) // 2)  # (n/2, 128): element of D each register holds
        cols = 8 * (i // 4) + 2 * (lane % 4) + i % 2
        out = np.zeros((n // 2, self.threads), acc_np)
        for g in self._warpgroups():
            if isinstance(op.a, list):
                ma = np.concatenate([self._frag_a(op.a, 128 * g + 32 * wi, dt) for wi in range(4)])
            else:
                ma = self._wgmma_operand(self._desc(op.a, g), 64, k, dt, op.trans_a)
            mbt = self._wgmma_operand(self._desc(op.b, g), n, k, dt, op.trans_b)  # n x k
            if dt.is_int:
                ci = np.zeros((64, n), np.int64)
                ci[rows, cols] = accs[:, 128 * g:128 * g + 128]
                di = ma.astype(np.int64) @ mbt.astype(np.int64).T + ci
                out[:, 128 * g:128 * g + 128] = di[rows, cols].astype(np.int32)  # wraps like the hardware
            else:
                am, bm = ma.astype(np.float32), mbt.astype(np.float32)
                if dt.name == "float32":  # tf32: the low 13 mantissa bits are not used
                    am, bm = ((x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32) for x in (am, bm))
                cm = np.zeros((64, n), np.float64)
                cm[rows, cols] = accs[:, 128 * g:128 * g + 128]
                dm = am.astype(np.float64) @ bm.astype(np.float64).T + cm
                out[:, 128 * g:128 * g + 128] = dm[rows, cols].astype(np.float32)
        op.out = list(out)

    # control flow (conditions of loops and ifs are uniform)
    def _uniform(self, h: H) -> Any:
        assert (h.v == h.v[0]).all()
        return h.v[0]

    def for_range(self, lb: H, ub: H, step: H, iv_dtype: DType, carried: Any, body: Any,
                  unroll: int | None = None) -> list[Any]:
        regs = [h for h, _ in carried]
        iv, end, st = self._uniform(lb), self._uniform(ub), self._uniform(step)
        for i in range(int(iv), int(end), int(st)):
            regs = body(self._h(np.array(i).astype(_np(iv_dtype))), regs)
        return regs

    def while_loop(self, carried: Any, cond: Any, body: Any) -> list[Any]:
        regs = [h for h, _ in carried]
        while self._uniform(cond(regs)):
            regs = body(regs)
        return regs

    def if_else(self, cond: H, result_types: Any, then: Any, otherwise: Any) -> list[Any]:
        return then() if self._uniform(cond) else otherwise()

    def when(self, cond: H, body: Callable[[], None]) -> None:
        self.active.append(cond.v.astype(bool))
        try:
            body()
        finally:
            self.active.pop()

    def device_print(self, prefix: str, values: Any) -> None:
        """One line per active thread, as CUDA's ``vprintf`` writes them (in thread order here)."""
        x, y, z = self.pid
        for t in np.nonzero(self._mask(None) & self.present)[0]:
            print(f"pid ({x}, {y}, {z}) {prefix} {' '.join(str(h.v[t]) for h, _ in values)}", flush=True)


class GlobalMemory:
    """The array arguments of a launch laid out in one byte buffer, as a GPU's global memory.

    Each array spans the bytes from its lowest to its highest element (strided views included);
    arrays whose spans overlap (an array and a view of it, a tensor descriptor's base passed beside
    the tensor) share one region, so a write through one is seen through the other.  A region
    keeps its host address modulo 256, so alignment facts hold as on the host."""

    def __init__(self, args: Sequence[Any]) -> None:
        from numpy.lib.array_utils import byte_bounds
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        spans = sorted(byte_bounds(a) for a in arrays)
        regions: list[list[int]] = []
        for lo, hi in spans:
            if regions and lo < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], hi)
            else:
                regions.append([lo, hi])
        self.regions: list[tuple[int, int, int]] = []  # (host low, host high, simulated address)
        at = 0
        for lo, hi in regions:
            start = -(-at // 256) * 256 + lo % 256
            self.regions.append((lo, hi, start))
            at = start + hi - lo + 16
        self.mem = np.zeros(-(-at // 256) * 256 + 256, np.uint8)
        self.values = [np.int64(self.address(a)) if isinstance(a, np.ndarray) else a for a in args]
        for lo, hi, start in self.regions:
            self.mem[start:start + hi - lo] = self._host(lo, hi)

    @staticmethod
    def _host(lo: int, hi: int) -> np.ndarray:
        return np.ctypeslib.as_array((ctypes.c_uint8 * max(hi - lo, 1)).from_address(lo))[:hi - lo]

    def address(self, a: np.ndarray) -> int:
        """The simulated address of ``a``'s first element."""
        ptr = a.__array_interface__["data"][0]
        for lo, hi, start in self.regions:
            if lo <= ptr <= hi:
                return start + ptr - lo
        raise AssertionError("not an argument of this launch")

    def write_back(self) -> None:
        for lo, hi, start in self.regions:
            self._host(lo, hi)[:] = self.mem[start:start + hi - lo]


def addresses(args: Sequence[Any]) -> list[int]:
    """The simulated address each array argument of ``run`` gets (0 for the others), so a test
    can store pointers to its arrays in another array."""
    return [int(v) if isinstance(a, np.ndarray) else 0 for a, v in zip(args, GlobalMemory(args).values)]


def run(kernel: Any, args: Sequence[Any], grid: tuple[int, ...], threads: int, num_stages: int = 1,
        recompute_budget: int | None = None, options: Options | None = None) -> None:
    """Run the lowered ``kernel`` (tile IR) on numpy arrays: the arrays are copied into one byte
    buffer (``GlobalMemory``), their addresses passed as the pointers, and copied back after
    (``recompute_budget``: the emitter's, where given; ``options``: the compile's, which
    ``threads`` and ``num_stages`` stand for where not given)."""
    memory = GlobalMemory(args)
    mem, values = memory.mem, memory.values
    g = (tuple(grid) + (1, 1, 1))[:3]
    if options is None:
        options = Options(num_warps=threads // WARP, num_stages=num_stages, codegen=CodegenChoices.from_env())
    for z in range(g[2]):
        for y in range(g[1]):
            for x in range(g[0]):
                def lowered(o, at=(x, y, z)):
                    emitter = SimEmitter(values, at, g, mem)
                    if recompute_budget is not None:
                        emitter.recompute_budget = recompute_budget
                    return lower_with_tensor_cores(kernel, emitter, o, HOPPER)
                applicable(lowered, options)
    memory.write_back()
