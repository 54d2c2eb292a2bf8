"""pytest plugin: ``TILES_AS_TRITON=1 python -m pytest ...`` runs a test suite written for Triton
on tiles.  Registered as the ``pytest11`` entry point ``tiles_as_triton``; where the package's
entry points are not installed, ``-p tiles_as_triton_pytest`` loads it.  It lives outside the
``tiles`` package so that, without the variable, a pytest run imports nothing of tiles."""

from __future__ import annotations

import os

_SWITCH = "TILES_AS_TRITON"


def pytest_load_initial_conftests(early_config: object, parser: object, args: object) -> None:
    """Install the alias before any conftest or test module imports ``triton``."""
    if os.environ.get(_SWITCH, "").strip().lower() in ("1", "true", "yes", "on"):
        from tiles.as_triton import install_as_triton
        install_as_triton()


def pytest_report_header(config: object) -> str | None:
    if os.environ.get(_SWITCH, "").strip().lower() in ("1", "true", "yes", "on"):
        from tiles.as_triton import TRITON_VERSION
        return f"tiles: Triton compatibility mode ({_SWITCH}=1): 'import triton' is tiles, as Triton {TRITON_VERSION}"
    return None
