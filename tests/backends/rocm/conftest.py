"""ROCm backend tests: compile-only (no AMD GPU needed), but they need an ``ld.lld``."""

import pytest

from tiles.backends.rocm import toolchain


@pytest.fixture(scope="session")
def linker():
    path = toolchain.find_linker()
    if path is None:
        pytest.skip("no ld.lld found (install ROCm or `apt-get install lld`)")
    return path


@pytest.fixture(scope="session")
def code_object_version(linker):
    return toolchain.code_object_version(linker)


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path / "tiles-cache"))
