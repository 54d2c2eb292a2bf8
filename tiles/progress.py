"""Progress on stderr for the slow parts: compiles that take more than ``COMPILE_NOTICE_S``
seconds and autotuning.

``TILES_PROGRESS=1`` turns it on, ``TILES_PROGRESS=0`` off; unset, it is on when stderr is
a terminal.  On a terminal the current step is one line redrawn in place (a bar while
autotuning, the seconds so far while compiling) and each finished step leaves one line;
elsewhere (a log, CI) only the finished-step lines are written: one per autotuning
configuration with its time, one when a slow compile starts and one when it ends.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from . import config

COMPILE_NOTICE_S = 2.0  # a compile that runs longer than this is reported
REDRAW_S = 1.0          # how often a live compile line is redrawn on a terminal
BAR_WIDTH = 20

_lock = threading.RLock()
_live: list[list[str]] = []  # redrawable lines (one-item cells), newest last and on screen; terminal only


def enabled() -> bool:
    return config.progress()


def _stream() -> TextIO:
    return sys.stderr


def _on_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _redraw(stream: TextIO) -> None:
    stream.write("\r\x1b[K" + (_live[-1][0] if _live else ""))
    stream.flush()


def report(text: str) -> None:
    """One finished-step line (on a terminal, above the live line, which is redrawn)."""
    stream = _stream()
    with _lock:
        if _on_terminal(stream) and _live:
            stream.write("\r\x1b[K" + text + "\n")
            _redraw(stream)
        else:
            stream.write(text + "\n")
            stream.flush()


class _LiveLine:
    """A line redrawn in place on a terminal; nothing elsewhere."""

    def __init__(self) -> None:
        self.stream = _stream()
        self.terminal = _on_terminal(self.stream)
        self.cell: list[str] | None = None

    def show(self, text: str) -> None:
        if not self.terminal:
            return
        with _lock:
            if self.cell is None:
                self.cell = [text]
                _live.append(self.cell)
            else:
                self.cell[0] = text
            _redraw(self.stream)

    def close(self) -> None:
        if self.cell is None:
            return
        with _lock:
            _live[:] = [c for c in _live if c is not self.cell]
            _redraw(self.stream)
        self.cell = None


def _bar(done: int, total: int) -> str:
    filled = BAR_WIDTH * done // max(total, 1)
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


class Autotuning:
    """Progress of one autotuning run over ``total`` configurations."""

    def __init__(self, kernel: str, total: int) -> None:
        self.kernel, self.total = kernel, total
        self.on = enabled()
        self.live = _LiveLine() if self.on else None
        self.last = ""  # the previous configuration's outcome, shown on the bar

    def trying(self, index: int, config: Any) -> None:
        if self.live is not None:
            self.live.show(f"tiles: autotuning {self.kernel} {_bar(index, self.total)} "
                           f"{index + 1}/{self.total}: {config}{self.last}")

    def finished(self, index: int, config: Any, result: float | str) -> None:
        """``result``: the configuration's time in ms, or why it could not run."""
        if self.live is None:
            return
        outcome = f"{result:.4g} ms" if isinstance(result, float) else f"failed: {result}"
        if self.live.terminal:
            self.last = f" (previous: {outcome.splitlines()[0][:60]})"
            return
        report(f"tiles: autotuning {self.kernel} [{index + 1}/{self.total}] {config}: {outcome}")

    def close(self, best: Any | None, best_ms: float | None, seconds: float) -> None:
        if self.live is not None:
            self.live.close()
        if self.on and best is not None and best_ms is not None:
            report(f"tiles: autotuned {self.kernel} over {self.total} configs in {seconds:.1f}s; "
                   f"best {best} ({best_ms:.4g} ms)")


class _CompileWatch:
    """Says so on stderr when a compile outlives ``COMPILE_NOTICE_S``; ticks on a terminal."""

    def __init__(self, kernel: str, backend: str, note: str) -> None:
        self.kernel, self.backend, self.note = kernel, backend, note
        self.start = time.perf_counter()
        self.live = _LiveLine()
        self.noticed = False
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="tiles-compile-progress", daemon=True)
        self.thread.start()

    def _what(self) -> str:
        return f"{self.kernel} for {self.backend}" + (f" ({self.note})" if self.note else "")

    def _watch(self) -> None:
        if self.stopped.wait(COMPILE_NOTICE_S):
            return
        self.noticed = True
        if not self.live.terminal:
            report(f"tiles: compiling {self._what()} (over {COMPILE_NOTICE_S:g}s so far)...")
            return
        while True:
            self.live.show(f"tiles: compiling {self._what()}: {time.perf_counter() - self.start:.0f}s")
            if self.stopped.wait(REDRAW_S):
                return

    def stop(self, failed: bool) -> None:
        self.stopped.set()
        self.thread.join()
        self.live.close()
        seconds = time.perf_counter() - self.start
        if seconds > COMPILE_NOTICE_S or self.noticed:
            how = "failed after" if failed else "took"
            report(f"tiles: compiling {self._what()} {how} {seconds:.1f}s")


@contextmanager
def compiling(kernel: str, backend: str, note: str = "") -> Iterator[None]:
    """Around one compile: reports it on stderr if it runs longer than ``COMPILE_NOTICE_S``
    (``note``: which part of the compile, in parentheses after the backend)."""
    if not enabled():
        yield
        return
    watch = _CompileWatch(kernel, backend, note)
    failed = True
    try:
        yield
        failed = False
    finally:
        watch.stop(failed)
