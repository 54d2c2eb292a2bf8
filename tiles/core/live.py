"""Values that hold their data: what the stepping interpreter's eager builder produces.

While a kernel is *traced*, a ``tl.tensor`` stands for a value known only when the kernel runs.
In stepping mode (``TILES_INTERPRET=step``, ``backends/stepping.py``) every op is executed as soon
as it is built, one program at a time, so its result is a ``LiveValue``: an IR value that also
carries the interpreter's array for the program being run (leading program axis of length 1).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .errors import CompilationError
from .ir import TileType, Value


class DataNeededError(CompilationError):
    """Kernel code asked for a tile's data (``x.numpy()``, ``float(x)``...) while it was traced."""


class Session(Protocol):
    def format(self, value: LiveValue) -> str: ...

    def host(self, value: LiveValue) -> np.ndarray: ...

    def truth(self, value: LiveValue) -> bool: ...


class LiveValue(Value):
    """An IR value with the data of the program being stepped (``array``: shape ``(1, *shape)``)."""

    __slots__ = ("array", "session")

    def __init__(self, type: TileType, array: Any, session: Session) -> None:
        super().__init__(type)
        self.array = array
        self.session = session


def live(handle: Value) -> LiveValue | None:
    """``handle`` when it holds data (stepping mode), else None (it is being traced)."""
    return handle if type(handle) is LiveValue else None
