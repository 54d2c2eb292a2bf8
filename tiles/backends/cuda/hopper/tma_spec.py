"""What the host needs to encode one TMA tensor map: a descriptor's base parameter, where its
sizes and strides come from, its element type and its box (the descriptor's block shape).

The lowering records these (``tma.py``, ``Lowered.tensor_maps`` as JSON) and the CUDA launcher
encodes them with the launch's values (``cuda/tensor_map.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_BOX = 256


_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


@dataclass(frozen=True)
class Source:
    """Where a size or stride comes from: kernel parameter ``param`` (when not None), else
    ``value``; or, with ``op`` (add, sub, mul), that operation on ``args`` wrapped to a signed
    ``bits``-bit integer, as the kernel computes it (``Z * H * N_CTX``)."""

    param: int | None = None
    value: int = 0
    op: str = ""
    args: tuple[Source, ...] = ()
    bits: int = 64

    def of(self, values: Sequence[Any]) -> int:
        if self.op:
            x = _OPS[self.op](*(a.of(values) for a in self.args)) % (1 << self.bits)
            return x - (1 << self.bits) if x >> (self.bits - 1) else x
        return int(self.value if self.param is None else values[self.param])

    def to_json(self) -> Any:
        if self.op:
            return {"op": self.op, "bits": self.bits, "args": [a.to_json() for a in self.args]}
        return [self.param, self.value]

    @classmethod
    def from_json(cls, d: Any) -> Source:
        if isinstance(d, dict):
            return cls(op=d["op"], bits=d["bits"], args=tuple(cls.from_json(a) for a in d["args"]))
        return cls(d[0], d[1])


@dataclass(frozen=True)
class MapSpec:
    """One descriptor's tensor map: sizes and strides (in elements) outermost first, as the
    descriptor lists them; the innermost stride is 1."""

    base: int                  # kernel parameter holding the base pointer
    dtype: str                 # element dtype name (a key of DATA_TYPES)
    itemsize: int
    shape: tuple[Source, ...]
    strides: tuple[Source, ...]
    box: tuple[int, ...]
    swizzle: int = 0           # bytes of a swizzled row (32, 64, 128; smem.py's pattern), 0: none
    multiples: tuple[Source, ...] = ()  # each must be a multiple of strides[0] (tma_rebase.py)

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "dtype": self.dtype, "itemsize": self.itemsize, "box": list(self.box),
                "shape": [s.to_json() for s in self.shape], "strides": [s.to_json() for s in self.strides],
                "swizzle": self.swizzle, "multiples": [m.to_json() for m in self.multiples]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MapSpec:
        return cls(d["base"], d["dtype"], d["itemsize"], tuple(Source.from_json(x) for x in d["shape"]),
                   tuple(Source.from_json(x) for x in d["strides"]), tuple(d["box"]), d.get("swizzle", 0),
                   tuple(Source.from_json(x) for x in d.get("multiples", ())))


def box_fits(box: Sequence[int], itemsize: int, swizzle: int = 0) -> bool:
    """TMA's rules for a box without interleave: 1 to 256 elements per dimension, the innermost
    a multiple of 16 bytes and, when swizzled, no longer than the swizzle's row."""
    inner = box[-1] * itemsize
    return all(1 <= b <= MAX_BOX for b in box) and inner % 16 == 0 and (not swizzle or inner <= swizzle)
