"""``tiles.profiler``: the part of Triton's profiler (proton) that scripts call, timed on the host.

``start(name)`` opens a session, ``scope(name, metrics)`` (a context manager or decorator) and
``enter_scope``/``exit_scope`` time a region while the session is active (``activate`` /
``deactivate``), and ``finalize()`` writes ``<name>.hatchet``: a JSON tree of scopes, each with
its call ``count``, ``time (ns)`` and the sums of the metrics given to it (``bytes``,
``flops16``...).  ``tiles.profiler.viewer`` reads it back.

Differences from proton: times are host wall-clock around each scope, with the device
synchronized on entry and exit (so a scope's time includes launch overhead); kernel launches
are not recorded as scopes of their own (``hook="triton"`` is accepted and adds nothing), and
``context``, ``data``, ``backend`` and ``mode`` are accepted and ignored.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any


class _Session:
    def __init__(self, name: str) -> None:
        self.name = name
        self.active = True
        self.root: dict[str, Any] = {"frame": {"name": "ROOT"}, "metrics": {}, "children": []}
        self.stack: list[tuple[dict[str, Any], int]] = []


_sessions: dict[int, _Session] = {}


def start(name: str | None = None, *, context: str = "shadow", data: str = "tree", backend: str | None = None,
          mode: Any = None, hook: str | None = None) -> int:
    """Open a session writing ``<name>.hatchet`` on ``finalize`` (``proton`` by default); its id."""
    session = max(_sessions, default=-1) + 1
    _sessions[session] = _Session(name or "proton")
    return session


def _chosen(session: int | None) -> list[_Session]:
    if session is None:
        return list(_sessions.values())
    if session not in _sessions:
        raise ValueError(f"tiles.profiler: no session {session}; open one with tiles.profiler.start(name)")
    return [_sessions[session]]


def activate(session: int | None = None) -> None:
    """Record scopes again in ``session`` (every session when None)."""
    for s in _chosen(session):
        s.active = True


def deactivate(session: int | None = None) -> None:
    """Stop recording scopes in ``session`` (every session when None) until ``activate``."""
    for s in _chosen(session):
        s.active = False


def _synchronize() -> None:
    from ..runtime.driver import driver
    driver.active.get_device_interface().synchronize()


def _child(node: dict[str, Any], name: str) -> dict[str, Any]:
    for child in node["children"]:
        if child["frame"]["name"] == name:
            return child
    child = {"frame": {"name": name}, "metrics": {"count": 0, "time (ns)": 0}, "children": []}
    node["children"].append(child)
    return child


def enter_scope(name: str, *, triton_op: bool = False, metrics: dict[str, float] | None = None) -> None:
    """Start timing ``name`` (nested in the open scope) in every active session."""
    live = [s for s in _sessions.values() if s.active]
    if live:
        _synchronize()
    for s in live:
        node = _child(s.stack[-1][0] if s.stack else s.root, name)
        for key, value in (metrics or {}).items():
            node["metrics"][key] = node["metrics"].get(key, 0) + value
        s.stack.append((node, time.perf_counter_ns()))


def exit_scope(name: str | None = None, *, triton_op: bool = False) -> None:
    """Stop timing the innermost open scope in every session that has one."""
    open_sessions = [s for s in _sessions.values() if s.stack]
    if open_sessions:
        _synchronize()
    now = time.perf_counter_ns()
    for s in open_sessions:
        node, began = s.stack.pop()
        node["metrics"]["count"] += 1
        node["metrics"]["time (ns)"] += now - began


class scope:  # noqa: N801 - proton's name
    """Time a region: ``with scope("name", {"flops16": 2 * M * N * K}):`` or ``@scope("name")``."""

    def __init__(self, name: str, metrics: dict[str, float] | None = None) -> None:
        self.name, self.metrics = name, metrics

    def __enter__(self) -> scope:
        enter_scope(self.name, metrics=self.metrics)
        return self

    def __exit__(self, *exc: Any) -> None:
        exit_scope(self.name)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with scope(self.name, self.metrics):
                return fn(*args, **kwargs)
        return timed


def finalize(session: int | None = None, output_format: str = "hatchet") -> None:
    """Write each chosen session's tree to ``<name>.hatchet`` and close it."""
    if output_format != "hatchet":
        raise ValueError(f"tiles.profiler writes output_format='hatchet' only, not {output_format!r}")
    for sid in [session] if session is not None else list(_sessions):
        s = _chosen(sid)[0]
        with open(f"{s.name}.hatchet", "w") as f:
            json.dump([s.root], f, indent=1)
        del _sessions[sid]
