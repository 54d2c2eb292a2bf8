"""A numpy SIMT simulator of the lowering's emitter contract, tensor-core calls included.

Every handle holds one value per thread of the program (a numpy array); warp-wide
calls (``ldmatrix``, ``mma``, ``shuffle_xor``) act on each group of 32 threads as
PTX specifies.  Threads run in lock step, so barriers are no-ops.  It lets the
tensor-core lowering (fragment layouts, MMA operand repacking, row reductions) be
checked numerically without a GPU: ``run(kernel_ir, args, grid, threads)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tiles.backends.base import Target
from tiles.backends.lowering.emitter import Emitter
from tiles.backends.lowering.lower import lower
from tiles.core import dtypes as D
from tiles.core.dtypes import DType, PointerType
from tiles.core.ops import Op

WARP = 32


class H:
    """A per-thread value (identity equality, like an SSA register)."""
    __slots__ = ("v",)

    def __init__(self, v: np.ndarray) -> None:
        self.v = v


def _np(dtype: Any) -> Any:
    if isinstance(dtype, PointerType):
        return np.int64
    if dtype.is_bool:
        return np.bool_
    return D._NUMPY[dtype.name]


_BIN: dict[Op, Callable[[Any, Any], Any]] = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.LT: np.less, Op.LE: np.less_equal,
    Op.GT: np.greater, Op.GE: np.greater_equal, Op.EQ: np.equal, Op.NE: np.not_equal,
    Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor, Op.MAXIMUM: np.fmax,
    Op.MINIMUM: np.fmin, Op.MAXIMUM_NAN: np.maximum, Op.MINIMUM_NAN: np.minimum,
}


class SimEmitter(Emitter):
    def __init__(self, args: Sequence[Any], pid: tuple[int, int, int], grid: tuple[int, int, int],
                 mem: np.ndarray, num_stages: int = 1) -> None:
        self.target = Target("cuda", arch="sm_90", warp_size=WARP)
        self.args, self.pid, self.grid, self.mem = args, pid, grid, mem
        self.num_stages = num_stages
        self.smem = np.zeros(256 * 1024, np.uint8)
        self.active: list[np.ndarray] = []

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
        return [self._h(a, dt) for a, (_n, dt) in zip(self.args, params)]

    def finish(self, local_bytes: int) -> Any:
        self.local_bytes = local_bytes
        return None

    def constant(self, value: Any, dtype: DType) -> H:
        return self._h(np.array(value).astype(_np(dtype)))

    def thread_id(self) -> H:
        return H(np.arange(self.threads, dtype=np.int32))

    def program_id(self, axis: int) -> H:
        return self._h(np.int32(self.pid[axis]))

    def num_programs(self, axis: int) -> H:
        return self._h(np.int32(self.grid[axis]))

    # arithmetic
    def binary(self, op: Op, a: H, b: H, dtype: Any) -> H:
        x, y = a.v, b.v
        with np.errstate(all="ignore"):
            if op is Op.DIV:
                r = x / y
            elif op is Op.IDIV:
                r = x // y
            elif op is Op.MOD:
                r = x % y
            elif op is Op.SHL:
                r = np.left_shift(x, y)
            elif op is Op.SHR:
                r = np.right_shift(x, y)
            else:
                r = _BIN[op](x, y)
        if op in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE):
            return H(r)
        return H(np.asarray(r).astype(x.dtype))

    def unary(self, op: Op, a: H, dtype: DType) -> H:
        x = a.v
        with np.errstate(all="ignore"):
            f = {Op.EXP2: np.exp2, Op.EXP: np.exp, Op.LOG2: np.log2, Op.LOG: np.log, Op.NEG: np.negative,
                 Op.ABS: np.abs, Op.SQRT: np.sqrt, Op.NOT: np.invert, Op.ISNAN: np.isnan}[op]
            r = f(x)
        return H(r if op is Op.ISNAN else r.astype(x.dtype))

    def fma(self, a: H, b: H, c: H, dtype: DType) -> H:
        return H((a.v * b.v + c.v).astype(a.v.dtype))

    def cast(self, a: H, src: DType, dst: DType, rounding: str = "rtne") -> H:
        return H(a.v.astype(_np(dst)))

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

    def _read(self, buf: np.ndarray, addr: np.ndarray, dtype: Any, ok: np.ndarray) -> np.ndarray:
        nd = np.dtype(_np(dtype))
        out = np.zeros(self.threads, nd)
        for t in np.nonzero(ok)[0]:
            assert 0 <= addr[t] <= len(buf) - nd.itemsize, (t, addr[t], len(buf))
            out[t] = buf[addr[t]:addr[t] + nd.itemsize].view(nd)[0]
        return out

    def _write(self, buf: np.ndarray, addr: np.ndarray, val: np.ndarray, dtype: Any, ok: np.ndarray) -> None:
        nd = np.dtype(_np(dtype))
        for t in np.nonzero(ok)[0]:
            buf[addr[t]:addr[t] + nd.itemsize] = np.array([val[t]], nd).view(np.uint8)

    def load(self, p: H, dtype: DType, mask: H | None, other: H | None) -> H:
        ok = self._mask(mask) if mask is not None else np.ones(self.threads, bool)
        v = self._read(self.mem, p.v, dtype, ok)
        if other is not None:
            v = np.where(ok, v, other.v.astype(v.dtype))
        return H(v)

    def load_vector(self, p: H, dtype: DType, width: int, mask: H | None, others: Any) -> list[Any]:
        s = dtype.itemsize
        return [self.load(H(p.v + i * s), dtype, mask, None if others is None else others[i])
                for i in range(width)]

    def store(self, p: H, value: H, dtype: DType, mask: H | None) -> None:
        self._write(self.mem, p.v, value.v, dtype, self._mask(mask))

    def store_vector(self, p: H, values: Sequence[Any], dtype: DType, mask: H | None) -> None:
        for i, v in enumerate(values):
            self.store(H(p.v + i * dtype.itemsize), v, dtype, mask)

    def atomic_rmw(self, *a: Any) -> H:
        raise NotImplementedError

    def atomic_cas(self, *a: Any) -> H:
        raise NotImplementedError

    def vector_ok(self, dtype: DType, width: int) -> bool:
        return width in (2, 4, 8)

    def shuffle_xor(self, value: H, lane_mask: int, dtype: Any) -> H:
        return H(value.v[np.arange(self.threads) ^ lane_mask])

    # local memory
    def local_itemsize(self, dtype: Any) -> int:
        return 8 if isinstance(dtype, PointerType) else max(1, dtype.itemsize)

    def _laddr(self, byte_offset: int, index: H, dtype: Any) -> np.ndarray:
        return byte_offset + index.v.astype(np.int64) * self.local_itemsize(dtype)

    def local_load(self, byte_offset: int, index: H, dtype: Any) -> H:
        ok = np.ones(self.threads, bool)
        return H(self._read(self.smem, self._laddr(byte_offset, index, dtype), dtype, ok))

    def local_store(self, byte_offset: int, index: H, value: H, dtype: Any, mask: H | None) -> None:
        self._write(self.smem, self._laddr(byte_offset, index, dtype), value.v, dtype, self._mask(mask))

    def barrier(self) -> None:
        pass

    # tensor cores (fp16 -> fp32 only)
    def mma_shape(self, in_dtype: DType, acc_dtype: DType, input_precision: str) -> Any:
        if in_dtype.name == "float16" and acc_dtype.name == "float32":
            return (16, 8, 16)
        return None

    def _halves(self, reg: H) -> tuple[np.ndarray, np.ndarray]:
        h = reg.v.astype(np.uint32).view(np.uint32)
        lo = (h & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
        hi = (h >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
        return lo, hi

    def mma(self, shape: Any, a: Sequence[Any], b: Sequence[Any], c: Sequence[Any], in_dtype: DType) -> list[Any]:
        assert tuple(shape) == (16, 8, 16)
        outs = [np.zeros(self.threads, np.float32) for _ in range(4)]
        ah = [self._halves(r) for r in a]
        bh = [self._halves(r) for r in b]
        for w in range(self.threads // WARP):
            A = np.zeros((16, 16), np.float32)
            B = np.zeros((16, 8), np.float32)
            C = np.zeros((16, 8), np.float32)
            for lane in range(WARP):
                t = w * WARP + lane
                g, q = lane // 4, lane % 4
                for i, (row, col) in enumerate(((g, 2 * q), (g + 8, 2 * q), (g, 2 * q + 8), (g + 8, 2 * q + 8))):
                    A[row, col], A[row, col + 1] = ah[i][0][t], ah[i][1][t]
                for i, k0 in enumerate((2 * q, 2 * q + 8)):
                    B[k0, g], B[k0 + 1, g] = bh[i][0][t], bh[i][1][t]
                C[g, 2 * q], C[g, 2 * q + 1] = c[0].v[t], c[1].v[t]
                C[g + 8, 2 * q], C[g + 8, 2 * q + 1] = c[2].v[t], c[3].v[t]
            Dm = A @ B + C
            for lane in range(WARP):
                t = w * WARP + lane
                g, q = lane // 4, lane % 4
                outs[0][t], outs[1][t] = Dm[g, 2 * q], Dm[g, 2 * q + 1]
                outs[2][t], outs[3][t] = Dm[g + 8, 2 * q], Dm[g + 8, 2 * q + 1]
        return [H(o) for o in outs]

    def ldmatrix(self, byte_offset: int, byte_index: H, count: int, trans: bool) -> list[Any]:
        regs = [np.zeros(self.threads, np.uint32) for _ in range(count)]
        for w in range(self.threads // WARP):
            for i in range(count):
                mat = np.zeros((8, 8), np.uint16)
                for r in range(8):
                    at = byte_offset + int(byte_index.v[w * WARP + 8 * i + r])
                    assert at % 16 == 0, at
                    mat[r] = self.smem[at:at + 16].view(np.uint16)
                if trans:
                    mat = mat.T
                for lane in range(WARP):
                    g, q = lane // 4, lane % 4
                    regs[i][w * WARP + lane] = int(mat[g, 2 * q]) | (int(mat[g, 2 * q + 1]) << 16)
        return [H(r.view(np.int32)) for r in regs]

    def cp_async(self, byte_offset: int, byte_index: H, p: H, nbytes: int, mask: H | None) -> bool:
        ok = self._mask(mask)
        for t in range(self.threads):
            at = byte_offset + int(byte_index.v[t])
            src = self.mem[p.v[t]:p.v[t] + nbytes] if ok[t] else np.zeros(nbytes, np.uint8)
            self.smem[at:at + nbytes] = src
        return True

    def cp_async_commit(self) -> None:
        pass

    def cp_async_wait(self, pending: int) -> None:
        pass

    # control flow (conditions of loops and ifs are uniform)
    def _uniform(self, h: H) -> Any:
        assert (h.v == h.v[0]).all()
        return h.v[0]

    def for_range(self, lb: H, ub: H, step: H, iv_dtype: DType, carried: Any, body: Any) -> list[Any]:
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
        pass


def run(kernel: Any, args: Sequence[Any], grid: tuple[int, ...], threads: int, num_stages: int = 1) -> None:
    """Run the lowered ``kernel`` (tile IR) on numpy arrays: every array argument is copied
    into one byte buffer, its address passed as the pointer, and copied back after."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    total = sum(a.nbytes + 256 for a in arrays)
    mem = np.zeros(total, np.uint8)
    addr, at, values = {}, 0, []
    for a in args:
        if isinstance(a, np.ndarray):
            addr[id(a)] = at
            mem[at:at + a.nbytes] = a.reshape(-1).view(np.uint8)
            values.append(np.int64(at))
            at += -(-(a.nbytes + 16) // 256) * 256
        else:
            values.append(a)
    g = (tuple(grid) + (1, 1, 1))[:3]
    for z in range(g[2]):
        for y in range(g[1]):
            for x in range(g[0]):
                lower(kernel, SimEmitter(values, (x, y, z), g, mem, num_stages), threads)  # type: ignore[arg-type]
    for a in arrays:
        a.reshape(-1).view(np.uint8)[:] = mem[addr[id(a)]:addr[id(a)] + a.nbytes]
