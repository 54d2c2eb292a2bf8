"""pytest integration: ``pytest conformance [--backend=NAME[,NAME...]] [--conformance-profile=ci]``.

Without ``--backend`` the suite runs against the interpreter (a sanity check of the
corpus and the reference) and against every other backend available here, e.g.
opencl through pocl on the CI machine.
"""

from __future__ import annotations

import secrets

import pytest

from tiles.conformance import backends as available_backends
from tiles.conformance import profiles
from tiles.conformance.report import Report

_REPORTS: dict[str, Report] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--backend", default=None,
                    help="backend(s) under test, comma separated: a registered name, an entry point of "
                         "group tiles.backends, or module:object (default: interpreter plus every "
                         "available backend)")
    group.addoption("--conformance-profile", default="ci", choices=sorted(profiles.PROFILES),
                    help="ci (fast, seed 0 unless --conformance-seed) or thorough (a fresh seed per run)")
    group.addoption("--conformance-seed", type=int, default=None,
                    help="seed of the inputs and generated programs (replays a run)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a long test, left out of the quick run (-m 'not slow')")


def selected_backends(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--backend")
    if chosen:
        return [b.strip() for b in chosen.split(",") if b.strip()]
    others = [b for b in available_backends.available() if b != available_backends.REFERENCE]
    return [available_backends.REFERENCE, *others]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        # a backend other than the reference takes minutes on a CPU (pocl): slow
        params = [pytest.param(b, marks=[] if b == available_backends.REFERENCE else [pytest.mark.slow])
                  for b in selected_backends(metafunc.config)]
        metafunc.parametrize("backend_name", params)


@pytest.fixture(scope="session")
def profile(request: pytest.FixtureRequest) -> profiles.Profile:
    return profiles.get(request.config.getoption("--conformance-profile"))


@pytest.fixture(scope="session")
def conformance_seed(request: pytest.FixtureRequest, profile: profiles.Profile) -> int:
    seed = request.config.getoption("--conformance-seed")
    if seed is None:
        seed = secrets.randbits(32) if profile.random_seed else 0
    return seed


@pytest.fixture(scope="session")
def reports() -> dict[str, Report]:
    return _REPORTS


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    for report in _REPORTS.values():
        terminalreporter.write_line("")
        for line in report.table().splitlines():
            terminalreporter.write_line(line)
