"""The Triton compatibility mode's tests (tiles/as_triton).  ``alias`` installs the mode for one
test and removes it after, so the rest of the suite sees no ``triton`` module."""

from __future__ import annotations

import sys

import pytest

from tiles.as_triton import install_as_triton, uninstall_as_triton


@pytest.fixture
def alias():
    if "triton" in sys.modules and getattr(sys.modules["triton"], "tiles", None) is None:
        pytest.skip("a real Triton is imported in this process")
    install_as_triton()
    try:
        yield sys.modules["triton"]
    finally:
        uninstall_as_triton()
