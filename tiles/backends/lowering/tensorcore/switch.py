"""A code shape the tensor-core lowering may take, switched off per thread by a backend that
lowers a kernel again without it (``tma_claim``'s TMA, ``inflight``'s products left in flight)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class ThreadSwitch:
    """On unless this thread is inside ``off()``."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def on(self) -> bool:
        return not getattr(self._local, "off", False)

    @contextlib.contextmanager
    def off(self) -> Iterator[None]:
        before = getattr(self._local, "off", False)
        self._local.off = True
        try:
            yield
        finally:
            self._local.off = before
