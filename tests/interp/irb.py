"""A small hand-written IR builder for interpreter tests (no tracer needed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.builder import Builder, register_code
from tiles.core.dtypes import DType, PointerType
from tiles.core.ir import Kernel, Param, TileType, Value
from tiles.core.ops import Op


class KB:
    """Builds a kernel op by op; results are IR ``Value``s."""

    def __init__(self, name: str = "kern", code: Any = None) -> None:
        self.name = name
        self.b = Builder()
        self.params: list[Param] = []
        if code is not None:  # make locations point at the calling test
            register_code(code)

    # -- parameters
    def ptr(self, name: str, dtype: DType) -> Value:
        v = Value(TileType(PointerType(dtype)), name)
        self.params.append(Param(name, v))
        return v

    def scalar(self, name: str, dtype: DType) -> Value:
        v = Value(TileType(dtype), name)
        self.params.append(Param(name, v))
        return v

    def kernel(self) -> Kernel:
        return Kernel(self.name, self.params, self.b.blocks[0])

    # -- generic emission
    def op(self, op: Op, *xs: Value, attrs: Any = None, types: Sequence[TileType] | None = None,
           regions: Sequence[Any] = ()) -> Any:
        rs = self.b.emit(op, list(xs), attrs, types, regions)
        return rs[0] if len(rs) == 1 else rs

    def const(self, value: Any, dtype: DType, shape: tuple[int, ...] = ()) -> Value:
        return self.op(Op.CONST, attrs=at.Const(value, dtype, shape))

    def arange(self, n: int, start: int = 0) -> Value:
        return self.op(Op.ARANGE, attrs=at.Arange(start, start + n))

    def pid(self, axis: int = 0) -> Value:
        return self.op(Op.PROGRAM_ID, attrs=at.Axis(axis))

    def nprog(self, axis: int = 0) -> Value:
        return self.op(Op.NUM_PROGRAMS, attrs=at.Axis(axis))

    def bcast(self, x: Value, shape: tuple[int, ...]) -> Value:
        if x.type.shape == shape:
            return x
        if x.type.shape and len(x.type.shape) < len(shape):
            x = self.reshape(x, (1,) * (len(shape) - len(x.type.shape)) + x.type.shape)
        return self.op(Op.BROADCAST, x, attrs=at.Shape(shape))

    def reshape(self, x: Value, shape: tuple[int, ...]) -> Value:
        return self.op(Op.RESHAPE, x, attrs=at.Shape(shape))

    def cast(self, x: Value, dtype: DType, rounding: str = "rtne") -> Value:
        return self.op(Op.CAST, x, attrs=at.Cast(dtype, rounding))

    def bin(self, op: Op, a: Value, b: Value) -> Value:
        shape = a.type.shape if len(a.type.shape) >= len(b.type.shape) else b.type.shape
        return self.op(op, self.bcast(a, shape), self.bcast(b, shape))

    def addptr(self, p: Value, off: Value) -> Value:
        shape = off.type.shape if len(off.type.shape) >= len(p.type.shape) else p.type.shape
        return self.op(Op.ADDPTR, self.bcast(p, shape), self.bcast(off, shape))

    def load(self, p: Value, mask: Value | None = None, other: Value | None = None) -> Value:
        xs = [p] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        return self.op(Op.LOAD, *xs, attrs=at.Load(mask is not None, other is not None))

    def store(self, p: Value, v: Value, mask: Value | None = None) -> None:
        xs = [p, v] + ([mask] if mask is not None else [])
        self.op(Op.STORE, *xs, attrs=at.Store(mask is not None))

    def atomic(self, kind: str, p: Value, v: Value, mask: Value | None = None,
               used: bool = True) -> Value:
        xs = [p, v] + ([mask] if mask is not None else [])
        return self.op(Op.ATOMIC, *xs, attrs=at.Atomic(kind, mask is not None, result_used=used))

    def offsets(self, block: int) -> Value:
        """pid * block + arange(block) as int32."""
        base = self.bin(Op.MUL, self.pid(), self.const(block, dt.int32))
        return self.bin(Op.ADD, base, self.arange(block))

    # -- control flow
    def for_(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value],
             body: Callable[..., Sequence[Value]]) -> Any:
        iv = Value(lb.type, "iv")
        args = [Value(v.type) for v in inits]
        with self.b.region([iv, *args]) as blk:
            blk.yields = list(body(iv, *args))
        rs = self.b.emit(Op.FOR, [lb, ub, step, *inits], None, [v.type for v in inits], [blk])
        return rs

    def if_(self, cond: Value, then: Callable[[], Sequence[Value]],
            otherwise: Callable[[], Sequence[Value]], types: Sequence[TileType] = ()) -> Any:
        with self.b.region() as t:
            t.yields = list(then())
        with self.b.region() as e:
            e.yields = list(otherwise())
        return self.b.emit(Op.IF, [cond], None, list(types), [t, e])

    def while_(self, inits: Sequence[Value], cond: Callable[..., Value],
               body: Callable[..., Sequence[Value]]) -> Any:
        cargs = [Value(v.type) for v in inits]
        with self.b.region(cargs) as c:
            c.yields = [cond(*cargs)]
        bargs = [Value(v.type) for v in inits]
        with self.b.region(bargs) as bb:
            bb.yields = list(body(*bargs))
        return self.b.emit(Op.WHILE, list(inits), None, [v.type for v in inits], [c, bb])
