"""The shapes a kernel reads (``x.shape``, ``desc.block_shape``): tuples that compare equal to a
list or tuple of the same sizes, as Triton's do (``x.shape == [BLOCK]`` is True there, its
shapes being ``tl.tuple``\\ s, which compare by their elements; a plain Python tuple never
equals a list)."""

from __future__ import annotations

from typing import Any


def _size(value: Any) -> Any:
    return getattr(value, "value", value) if type(value).__name__ == "constexpr" else value


class Shape(tuple):  # type: ignore[type-arg]
    """A tuple of ints; ``==`` and ``!=`` also take a list (or tuple) of ints or constexprs."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and all(a == _size(b) for a, b in zip(self, other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__
