"""Waiting for device work without blocking Ctrl-C.

Drivers' blocking waits (``clFinish``, ``cuStreamSynchronize``) sit in C code where
Python cannot run its signal handlers, so a KeyboardInterrupt waits for the kernel.
``poll_until`` asks a cheap "done yet?" question instead: first in a tight loop (a
short kernel costs no sleep), then with sleeps that grow to ``max_sleep``; Python
raises KeyboardInterrupt between two polls.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SPIN_SECONDS = 2e-4
FIRST_SLEEP = 2e-5
MAX_SLEEP = 2e-3


def poll_until(done: Callable[[], bool], max_sleep: float = MAX_SLEEP) -> None:
    """Return once ``done()`` is true; interruptible by signals between polls."""
    if done():
        return
    deadline = time.perf_counter() + SPIN_SECONDS
    while time.perf_counter() < deadline:
        if done():
            return
    pause = FIRST_SLEEP
    while not done():
        time.sleep(pause)
        pause = min(pause * 2, max_sleep)
