"""Runtime tests never touch the user's cache: each test gets its own TILES_CACHE_DIR."""

import pytest


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path / "tiles-cache"))
    monkeypatch.delenv("TILES_ALWAYS_COMPILE", raising=False)
    monkeypatch.delenv("TILES_PRINT_AUTOTUNING", raising=False)
    monkeypatch.delenv("TILES_DEBUG", raising=False)
    monkeypatch.setenv("TILES_BACKEND", "interpreter")
    return tmp_path / "tiles-cache"
