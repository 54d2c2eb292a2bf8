"""Triton compatibility mode: ``import triton`` (and the ``triton.*`` modules kernels and host
code use) gives tiles, so installed libraries written for Triton run unchanged.

Turn it on with ``tiles.install_as_triton()``, ``python -m tiles.run script.py`` or, for a
pytest run, ``TILES_AS_TRITON=1`` (docs/porting-from-triton.md, "Triton compatibility mode").
"""

from __future__ import annotations

import os

from .modules import TRITON_MODULES, TRITON_VERSION, installed
from .modules import install as _install_modules
from .modules import uninstall as _uninstall_modules
from .torch_view import hide_from_torch, stop_hiding

ENV_SWITCH = "TILES_AS_TRITON"

# Triton's environment variables that mean what a tiles one means: honoured in the mode unless
# the tiles one is set (a library's test suite sets TRITON_INTERPRET=1 to run on the CPU).
TRITON_ENV = {
    "TRITON_INTERPRET": "TILES_INTERPRET",
    "TRITON_ALWAYS_COMPILE": "TILES_ALWAYS_COMPILE",
    "TRITON_PRINT_AUTOTUNING": "TILES_PRINT_AUTOTUNING",
    "TRITON_DEBUG": "TILES_DEBUG",
}


def requested() -> bool:
    """Whether ``TILES_AS_TRITON`` asks for the mode."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("1", "true", "yes", "on")


def install_as_triton() -> None:
    """Make ``import triton`` give tiles in this process, for code imported from now on.

    Modules that imported the real Triton before this call keep it.  torch is told that no Triton
    is installed (``torch_view``), so ``torch.compile`` keeps working; a real Triton, if one is
    installed, is shadowed for everyone else.  Idempotent."""
    for theirs, ours in TRITON_ENV.items():
        if theirs in os.environ and ours not in os.environ:
            os.environ[ours] = os.environ[theirs]
    hide_from_torch()
    _install_modules()


def uninstall_as_triton() -> None:
    """Undo ``install_as_triton`` for later imports (modules that imported ``triton`` keep tiles)."""
    stop_hiding()
    _uninstall_modules()


__all__ = ["ENV_SWITCH", "TRITON_MODULES", "TRITON_VERSION", "install_as_triton", "installed", "requested",
           "uninstall_as_triton"]
