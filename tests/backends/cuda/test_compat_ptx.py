"""Every kernel of the compatibility corpus (tests/compat/kernels) compiles for CUDA without a GPU.

Each corpus module's ``check`` runs on ``cuda-ptx`` (tests/cuda_ptx_backend.py): every launch
compiles through the CUDA backend's stages to PTX for sm_90a (assembled by ptxas when it is on
PATH), then the traced IR runs on the interpreter, so the module's own assertions still hold.
What this catches: CUDA lowering gaps (an ``UnsupportedError``, an LLVM or ptxas failure) on the
kernels users bring, in CI.  What it cannot: values computed by the GPU (``bash .ci/gpu tests``
runs the corpus on a GPU).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_ptx_backend import NAME, PTXThenInterpret

import tiles

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat"))
from compat_harness import kernel_names, load  # noqa: E402
from expected_failures import EXPECTED_FAILURES, reason  # noqa: E402

pytestmark = pytest.mark.slow  # ~150 compilations: about a minute on the 2-core machine

# Corpus modules that ask the CUDA driver itself (device properties, SM counts): no driver here.
NEEDS_DRIVER = {
    "triton_runtime/driver_queries",
    "triton_tutorials/tut02_fused_softmax",
    "triton_tutorials/tut09_persistent_matmul",
    "triton_tutorials/tma_persistent_subtile",
}


@pytest.fixture
def cuda_ptx(tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path))  # compile every launch, not a cached one
    tiles.set_backend(NAME)
    yield
    tiles.set_backend(None)


def _case(name: str):
    if name in NEEDS_DRIVER:
        return pytest.param(name, marks=pytest.mark.skip(reason="asks the CUDA driver"))
    why = reason(EXPECTED_FAILURES, name, "cuda")
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why)) if why else name


@pytest.mark.parametrize("name", [_case(n) for n in kernel_names()])
def test_corpus_kernel_compiles_for_sm90a(name, cuda_ptx):
    before = PTXThenInterpret.assembled
    load(name).check(np.random.default_rng(sum(map(ord, name))))
    assert PTXThenInterpret.assembled > before, "no launch went through the CUDA compilation"
