"""The compatibility corpus runs every kernel on each backend available here.

The interpreter always; OpenCL when pyopencl finds a device (pocl in CI); CUDA
when pycuda and a GPU are present.  The backend is chosen the way a user
chooses it (``tiles.set_backend``), so the kernels' wrappers are Triton's,
unchanged.
"""

import numpy as np
import pytest

import tiles


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path / "tiles-cache"))
    monkeypatch.delenv("TILES_BACKEND", raising=False)
    monkeypatch.delenv("TILES_DEBUG", raising=False)


@pytest.fixture
def on_backend():
    """Select a backend for the rest of the test; undone afterwards."""
    chosen = []

    def select(name):
        tiles.set_backend(name)
        chosen.append(name)

    yield select
    if chosen:
        tiles.set_backend(None)


@pytest.fixture
def rng(request):
    seed = sum(map(ord, request.node.name))
    return np.random.default_rng(seed)
