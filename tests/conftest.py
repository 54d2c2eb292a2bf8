"""Shared pytest configuration: a derandomized Hypothesis profile for CI, and replayable random inputs.

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

import numpy as np
import pytest
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
        report.sections.append(("random seed", f"rng seed {seed}; replay with TILES_TEST_SEED={RUN_SEED} "
                                               f"pytest '{item.nodeid}'"))
