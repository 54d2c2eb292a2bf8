"""Choosing a backend from a command line, and saying which one ran and what else there is.

Scripts (the examples, benchmarks) add ``--backend`` with ``add_backend_argument`` and print
``describe(name)`` after their kernels ran::

    parser = argparse.ArgumentParser()
    add_backend_argument(parser)
    args = parser.parse_args()
    run(backend=chosen(args.backend))
    print(describe(args.backend))
"""

from __future__ import annotations

import argparse

from .. import config
from . import registry

AUTO = "auto"


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    """``--backend {auto,interpreter,opencl,cuda,rocm,...}`` (default ``auto``)."""
    names = [AUTO, *registry.known()]
    parser.add_argument("--backend", default=AUTO, metavar="NAME", type=_available_backend,
                        help=f"where kernels run: {', '.join(names)} (default: {AUTO}: TILES_BACKEND, "
                             "else a GPU backend when one is available, else the NumPy interpreter)")


def _available_backend(name: str) -> str:
    """argparse type: ``auto`` or a backend that can run here (else a usage error that says why)."""
    if name == AUTO:
        return name
    if name not in registry.known() and ":" not in name:
        raise argparse.ArgumentTypeError(f"unknown backend {name!r}; choose one of "
                                         f"{', '.join([AUTO, *registry.known()])}")
    ok, why = registry.status(name)
    if not ok:
        raise argparse.ArgumentTypeError(f"the {name} backend is not available here: {why}")
    return name


def chosen(name: str | None) -> str | None:
    """The backend name to launch with: None (the default backend) for ``auto``."""
    return None if name in (None, "", AUTO) else name


def _device(name: str) -> str:
    try:
        return registry.get(name).target().arch
    except Exception:  # a description only: never fail the run for it
        return ""


def describe(name: str | None) -> str:
    """Which backend ran (and on what device), why it was picked, and how to choose another."""
    picked = chosen(name)
    used = picked or registry.default().name
    device = _device(used)
    if picked:
        how = "chosen with --backend"
    elif config.backend_name():
        how = ("chosen by TILES_INTERPRET=step" if config.step_mode() else
               "chosen by TILES_INTERPRET=1" if config.interpret() else "chosen by TILES_BACKEND")
    elif used == "interpreter":
        how = "picked automatically: no GPU backend is available here"
    else:
        how = "picked automatically: the first available GPU backend"
    others = []
    for other in registry.known():
        if other == used:
            continue
        ok, why = registry.status(other)
        state = f"available{_not_auto(other)}" if ok else f"unavailable: {_first_line(why)}"
        others.append(f"  --backend {other:12} {state}")
    lines = [f"ran on the {used} backend{f' ({device})' if device and device != used else ''}, {how}.",
             "Other backends (or set TILES_BACKEND=<name>):", *others]
    return "\n".join(lines)


def _not_auto(name: str) -> str:
    if name == "interpreter":
        return " (auto's choice when there is no GPU backend)"
    if name == "step":
        return " (the interpreter one program at a time, for pdb: docs/debugging.md)"
    if name == "cuda-sim":
        return " (CUDA's lowering on a CPU simulator, for checking the lowering: docs/conformance.md)"
    try:
        return "" if registry.get(name).is_gpu() else " (not a GPU: auto does not pick it)"
    except Exception:
        return ""


def _first_line(text: str, limit: int = 90) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no reason given)"
    return line if len(line) <= limit else line[:limit - 3] + "..."
