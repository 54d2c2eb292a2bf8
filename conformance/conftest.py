"""pytest integration: ``pytest conformance [--backend=NAME[,NAME...]] [--conformance-profile=ci]``.

Without ``--backend`` the suite runs against the interpreter (a sanity check of the
corpus and the reference) and against every other backend available here, e.g.
opencl through pocl on the CI machine.
"""

from __future__ import annotations

import pytest

from conformance import backends as available_backends
from conformance import profiles
from conformance.report import Report

_REPORTS: dict[str, Report] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--backend", default=None,
                    help="backend(s) under test, comma separated: a registered name, an entry point of "
                         "group tiles.backends, or module:object (default: interpreter plus every "
                         "available backend)")
    group.addoption("--conformance-profile", default="ci", choices=sorted(profiles.PROFILES),
                    help="ci (fast, derandomized) or thorough")


def selected_backends(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--backend")
    if chosen:
        return [b.strip() for b in chosen.split(",") if b.strip()]
    others = [b for b in available_backends.available() if b != available_backends.REFERENCE]
    return [available_backends.REFERENCE, *others]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", selected_backends(metafunc.config))


@pytest.fixture(scope="session")
def profile(request: pytest.FixtureRequest) -> profiles.Profile:
    return profiles.get(request.config.getoption("--conformance-profile"))


@pytest.fixture(scope="session")
def reports() -> dict[str, Report]:
    return _REPORTS


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    for report in _REPORTS.values():
        terminalreporter.write_line("")
        for line in report.table().splitlines():
            terminalreporter.write_line(line)
