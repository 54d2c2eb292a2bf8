"""Triton names tiles does not implement: each one says so, and why, where a kernel uses it.

``tl.dot_scaled`` and friends exist so that ``import``s and module-level
references succeed; calling one, reading an attribute of one or using one as a
dtype raises a ``CompilationError`` naming the kernel line.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..core.builder import user_loc
from ..core.errors import CompilationError


class Unsupported:
    """A placeholder for the Triton name ``name``; any use raises ``CompilationError``."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "reason", reason)

    def fail(self) -> NoReturn:
        raise CompilationError(f"tl.{self.name} is not supported by tiles: {self.reason}", user_loc())

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self.fail()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        self.fail()

    def __repr__(self) -> str:
        return f"<tl.{self.name}: not supported by tiles>"


UNSUPPORTED: dict[str, str] = {
    "inline_asm_elementwise": "tiles compiles one IR for OpenCL, CUDA and ROCm, so it cannot embed "
                              "target assembly; write the operation with tl ops",
    "void": "void is only the result type of inline assembly, which tiles does not support",
    "slice": "slicing tiles (x[a:b]) is not supported; use masks, tl.split or tl.reshape",
    "target_info": "kernels cannot branch on the target; tiles compiles one kernel for every "
                   "backend (pass a tl.constexpr flag from the host instead)",
}


def placeholders() -> dict[str, Unsupported]:
    return {name: Unsupported(name, why) for name, why in UNSUPPORTED.items()}
