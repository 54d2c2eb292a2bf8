"""``tiles.profiler.viewer``: read a ``.hatchet`` file ``tiles.profiler.finalize`` wrote and print it,
with proton's derived metrics: ``time/ms`` (``/s``, ``/us``, ``/ns``) per call and throughput from
a scope's summed metrics, e.g. ``tflop16/s`` from ``flops16`` and ``gbyte/s`` from ``bytes``."""

from __future__ import annotations

import json
from typing import Any

_TIME_UNITS = {"time/s": 1e-9, "time/ms": 1e-6, "time/us": 1e-3, "time/ns": 1.0}
_RATE_PREFIXES = {"g": 1e9, "t": 1e12, "p": 1e15}


def _source(name: str) -> tuple[str, float] | None:
    """(summed metric, unit) a rate such as ``tflop16/s`` or ``gbyte/s`` divides by time."""
    base, _, per = name.partition("/")
    if per != "s" or base[:1] not in _RATE_PREFIXES or not (base[1:] == "byte" or base[1:].startswith("flop")):
        return None
    return ("bytes" if base[1:] == "byte" else base[1:].replace("flop", "flops")), _RATE_PREFIXES[base[0]]


def _check(name: str) -> None:
    if name not in _TIME_UNITS and _source(name) is None:
        raise ValueError(f"tiles.profiler.viewer: unknown metric {name!r}; known: {', '.join(_TIME_UNITS)}, "
                         "or g/t/p + byte or flop<bits> + /s (gbyte/s, tflop16/s)")


def _derive(name: str, metrics: dict[str, Any]) -> float | None:
    count, ns = metrics.get("count", 0), metrics.get("time (ns)", 0)
    if not count or not ns:
        return None
    if name in _TIME_UNITS:
        return ns * _TIME_UNITS[name] / count
    source, unit = _source(name) or ("", 1.0)
    return metrics[source] / (ns * 1e-9) / unit if source in metrics else None


def parse(metrics: list[str], filename: str, include: str | None = None, exclude: str | None = None,
          threshold: float | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The tree in ``filename`` with each node's ``metrics`` (names as given) added; and those names."""
    for m in metrics:
        _check(m)
    with open(filename) as f:
        tree = json.load(f)

    def walk(node: dict[str, Any]) -> None:
        node["derived"] = {m: _derive(m, node["metrics"]) for m in metrics}
        for child in node["children"]:
            walk(child)
    for root in tree:
        walk(root)
    return tree, list(metrics)


def print_tree(tree: list[dict[str, Any]], metrics: list[str], depth: int = 100, **options: Any) -> None:
    """One line per scope, indented by depth: its derived metrics, then its name."""
    def show(node: dict[str, Any], level: int) -> None:
        if level > depth:
            return
        values = ", ".join(f"{m}={v:.4g}" for m, v in node["derived"].items() if v is not None)
        if level:
            print(f"{'  ' * (level - 1)}{values or '-'}  {node['frame']['name']}")
        for child in node["children"]:
            show(child, level + 1)
    for root in tree:
        show(root, 0)
