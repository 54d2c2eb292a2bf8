"""Local-memory exchanges and their trailing barriers, which an emitter may let the lowering defer.

An exchange (a relayout through local memory, a reduction's partials) is: owners store, a
barrier, every thread loads, and a *trailing* barrier so that the next exchange may overwrite the
arena while slower threads still read it.  pocl compiles each barrier into a parallel region of
its own and its compile time grows faster than their number (a bitonic sort written with
reductions and broadcasts: 247 barriers).  On an emitter with ``defer_exchange_barriers`` the
trailing barrier is not emitted: the region stays *pending* (other threads may still read it), the
next exchange is placed where it does not overlap it (its own first barrier then ends every read
of the pending region), and the deferred barrier is emitted only where something else could
touch the pending region first: any other local-memory store, control flow (before a loop,
branch or ``when``, and at the end of each body), or an arena too small for a second region.
So the code never has more barriers than with trailing ones, and every write to local memory
is still ordered after the reads of what it overwrites.
"""

from __future__ import annotations

from typing import Any

from .emitter import Emitter


class Exchanges:
    """Where each exchange of a lowering starts in local memory, and its trailing barriers."""

    def __init__(self, emitter: Emitter) -> None:
        self.e = emitter
        self.defer = bool(getattr(emitter, "defer_exchange_barriers", False))
        self.pending: tuple[int, int] | None = None  # bytes [start, end) other threads may still read
        self.placed = False  # an exchange has started beside the pending region: its stores may go on
        if self.defer:
            self._install()

    @classmethod
    def of(cls, emitter: Emitter) -> Exchanges:
        """The emitter's one instance (its wrappers keep the state, however many lowerings use it)."""
        found = getattr(emitter, "_tiles_exchanges", None)
        if not isinstance(found, cls):
            found = cls(emitter)
            emitter._tiles_exchanges = found  # type: ignore[attr-defined]
        return found

    def start(self, nbytes: int) -> int:
        """The byte offset of a new exchange of ``nbytes`` (a multiple of 16) in the arena."""
        pending = self.pending
        if pending is None:
            return 0
        if nbytes <= pending[0]:
            base = 0
        elif pending[1] + nbytes <= self.e.target.shared_memory:
            base = pending[1]
        else:
            self.flush()
            return 0
        self.placed = True
        return base

    def end(self, base: int, nbytes: int) -> None:
        """After an exchange's last loads: its trailing barrier, or (deferring) a pending region."""
        if not self.defer:
            self.e.barrier()
            return
        self.pending = (base, base + nbytes)
        self.placed = False

    def flush(self) -> None:
        """The deferred trailing barrier, where a region is pending."""
        if self.pending is not None:
            self.e.barrier()  # the wrapper clears the state

    def _install(self) -> None:
        """Wrap the emitter's barrier, local stores and control flow (this lowering's instance only)."""
        e = self.e
        barrier, program_barrier = e.barrier, e.program_barrier
        local_store, local_store_vector = e.local_store, e.local_store_vector
        for_range, while_loop, if_else, when = e.for_range, e.while_loop, e.if_else, e.when

        def cleared(fn: Any) -> Any:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                self.pending, self.placed = None, False
                return fn(*args, **kwargs)
            return wrapped

        def ordered(fn: Any) -> Any:  # a local store outside an exchange placed beside the pending region
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if not self.placed:
                    self.flush()
                return fn(*args, **kwargs)
            return wrapped

        def closed(fn: Any) -> Any:  # a region's body: nothing pending at its end
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                out = fn(*args, **kwargs)
                self.flush()
                return out
            return wrapped

        def region(fn: Any, callbacks: dict[str, int]) -> Any:  # callbacks: name -> position
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                self.flush()
                positions = set(callbacks.values())
                args = tuple(closed(a) if i in positions else a for i, a in enumerate(args))
                kwargs = {k: closed(v) if k in callbacks else v for k, v in kwargs.items()}
                return fn(*args, **kwargs)
            return wrapped

        e.barrier = cleared(barrier)  # type: ignore[method-assign]
        e.program_barrier = cleared(program_barrier)  # type: ignore[method-assign]
        e.local_store = ordered(local_store)  # type: ignore[method-assign]
        e.local_store_vector = ordered(local_store_vector)  # type: ignore[method-assign]
        e.for_range = region(for_range, {"body": 5})  # type: ignore[method-assign]
        e.while_loop = region(while_loop, {"cond": 1, "body": 2})  # type: ignore[method-assign]
        e.if_else = region(if_else, {"then": 2, "otherwise": 3})  # type: ignore[method-assign]
        e.when = region(when, {"body": 1})  # type: ignore[method-assign]
