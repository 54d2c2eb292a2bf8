"""Shared pytest configuration: a derandomized Hypothesis profile for CI, replayable random inputs,
and which tests are slow.

Every test that draws random inputs takes the ``rng`` fixture: a NumPy generator seeded
from the run's seed and the test's id (``zlib.crc32``, never ``hash()``, which changes
between processes).  The run's seed is fresh each run unless ``TILES_TEST_SEED`` is set;
a failing test's report shows both seeds and the command that replays it.
"""

import atexit
import os
import secrets
import shutil
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from cuda_ptx_backend import register as register_cuda_ptx
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Each run compiles into a disk cache of its own (tiles/runtime/cache.py), so entries left by
# other code never stand in for a compile a test expects; a TILES_CACHE_DIR set outside wins.
if not os.environ.get("TILES_CACHE_DIR"):
    os.environ["TILES_CACHE_DIR"] = tempfile.mkdtemp(prefix="tiles-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TILES_CACHE_DIR"], True)

register_cuda_ptx()  # the "cuda-ptx" backend: CUDA's compilation checked without a GPU

RUN_SEED = int(os.environ.get("TILES_TEST_SEED") or secrets.randbits(32))
_SEED_KEY = pytest.StashKey[int]()


def test_seed(nodeid: str) -> int:
    """The seed of one test in this run: the same for the same TILES_TEST_SEED and test id."""
    return (RUN_SEED * 0x9E3779B1 + zlib.crc32(nodeid.encode())) % 2**32


test_seed.__test__ = False  # a helper, not a test


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    seed = test_seed(request.node.nodeid)
    request.node.stash[_SEED_KEY] = seed
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ANN201
    outcome = yield
    report = outcome.get_result()
    seed = item.stash.get(_SEED_KEY, None)
    if seed is not None and report.failed:
        marker = " -m slow" if item.get_closest_marker("slow") else ""
        report.sections.append(("random seed", f"rng seed {seed}; replay with TILES_TEST_SEED={RUN_SEED} "
                                               f"python -m pytest{marker} '{item.nodeid}'"))


TESTS = Path(__file__).resolve().parent
OPENCL_ONLY = TESTS / "backends" / "opencl"


def runs_on_opencl(item: pytest.Item) -> bool:
    """Whether ``item`` compiles with OpenCL: it lives in tests/backends/opencl, or one of its
    parameters (a ``backend`` argument, or a part of its id) is ``opencl``."""
    if OPENCL_ONLY in Path(str(item.path)).parents:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    named = any(isinstance(v, str) and v == "opencl" for v in callspec.params.values())
    return named or "opencl" in callspec.id.split("-")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that runs on OpenCL is slow: a first pocl compile takes seconds to minutes on a
    CPU (its kernel cache makes a second run fast, but CI starts cold).  CI's slow part runs them."""
    for item in items:
        if TESTS in Path(str(item.path)).parents and runs_on_opencl(item):
            item.add_marker(pytest.mark.slow)
