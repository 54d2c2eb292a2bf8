"""Triton's ``triton.runtime._allocation`` names: the allocator a launch asks for scratch memory.

tiles needs no launch-time scratch (``tiles.set_allocator`` keeps what it is given and never
calls it), so these exist for host code and test fixtures written for Triton, which install an
allocator with ``triton.set_allocator`` and put ``NullAllocator()`` back after."""

from __future__ import annotations

from typing import Any


class NullAllocator:
    """The allocator in place when none was set: asking it for memory is an error."""

    def __call__(self, size: int, alignment: int, stream: Any) -> Any:
        raise RuntimeError("this kernel asked for launch-time scratch memory and no allocator is set "
                           "(set one with triton.set_allocator)")


__all__ = ["NullAllocator"]
