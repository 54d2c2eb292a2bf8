"""The language tests run every kernel on the NumPy interpreter."""

import pytest

import tiles


@pytest.fixture(autouse=True)
def _interpreter_backend():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)

