"""Hand-built IR for the core tests: kernels made with the public Builder, no tracer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core.builder import Builder
from tiles.core.ir import Kernel, Param, TileType, Value
from tiles.core.ops import Op


class IR:
    """A kernel under construction; ``emit`` returns the single result (or the tuple)."""

    def __init__(self, name: str = "k") -> None:
        self.builder = Builder()
        self.params: list[Param] = []
        self.name = name

    def param(self, name: str, dtype: Any) -> Value:
        v = Value(TileType(dtype), name)
        self.params.append(Param(name, v))
        return v

    def pointer(self, name: str, element: D.DType) -> Value:
        return self.param(name, D.PointerType(element))

    def emit(self, op: Op, *operands: Value, attrs: Any = None,
             types: Sequence[TileType] | None = None, regions: Sequence[Any] = ()) -> Any:
        results = self.builder.emit(op, list(operands), attrs, types, regions)
        return results[0] if len(results) == 1 else results

    def const(self, value: Any, dtype: D.DType, shape: tuple[int, ...] = ()) -> Value:
        return self.emit(Op.CONST, attrs=A.Const(value, dtype, shape))

    def arange(self, n: int) -> Value:
        return self.emit(Op.ARANGE, attrs=A.Arange(0, n))

    def splat(self, x: Value, shape: tuple[int, ...]) -> Value:
        return self.emit(Op.BROADCAST, x, attrs=A.Shape(shape))

    def at(self, pointer: Value, n: int) -> Value:
        """``pointer + arange(n)``: a tile of n consecutive addresses."""
        return self.emit(Op.ADDPTR, self.splat(pointer, (n,)), self.arange(n))

    def load(self, pointer: Value, n: int) -> Value:
        return self.emit(Op.LOAD, self.at(pointer, n), attrs=A.Load(False, False))

    def store(self, pointer: Value, value: Value) -> None:
        n = value.type.shape[0]
        self.emit(Op.STORE, self.at(pointer, n), value, attrs=A.Store(False))

    def for_loop(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value],
                 body: Callable[..., Sequence[Value]]) -> Any:
        iv = Value(lb.type, "i")
        carried = [Value(v.type) for v in inits]
        with self.builder.region([iv, *carried]) as block:
            block.yields = list(body(iv, *carried))
        return self.emit(Op.FOR, lb, ub, step, *inits, types=[v.type for v in inits], regions=[block])

    def if_else(self, cond: Value, then: Callable[[], Sequence[Value]],
                otherwise: Callable[[], Sequence[Value]], types: Sequence[TileType]) -> Any:
        with self.builder.region() as t:
            t.yields = list(then())
        with self.builder.region() as e:
            e.yields = list(otherwise())
        return self.emit(Op.IF, cond, types=list(types), regions=[t, e])

    def kernel(self) -> Kernel:
        return Kernel(self.name, self.params, self.builder.blocks[0])


def run(kernel: Kernel, *arrays: np.ndarray) -> None:
    """Run ``kernel`` once (grid (1,)) on the NumPy interpreter, the IR's reference semantics."""
    from tiles.interp import interpret
    interpret(kernel, (1,), list(arrays))


def ops_of(kernel: Kernel) -> list[Op]:
    return [i.op for i in kernel.walk()]
