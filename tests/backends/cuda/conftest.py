"""Fixtures shared by the CUDA backend's tests."""

import pytest


@pytest.fixture
def tma_on(monkeypatch):
    """TMA on, every compile fresh, and sm_90a as the target (compile-only tests need no GPU)."""
    monkeypatch.setenv("TILES_TMA", "1")
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
