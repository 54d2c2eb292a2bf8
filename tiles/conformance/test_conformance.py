"""The suite as pytest tests: one test per (backend, family); the table is printed at the end."""

from __future__ import annotations

import dataclasses

import pytest

from tiles.conformance import backends as B
from tiles.conformance import suite
from tiles.conformance.corpus import MODULES
from tiles.conformance.generate.search import GENERATED_FAMILIES
from tiles.conformance.report import Report

CORPUS_FAMILIES = sorted({c.family for m in MODULES for c in m.cases(suite.profiles_ci())}
                         | {"examples"})


def _run(backend_name: str, family: str, profile, seed: int, reports: dict[str, Report]) -> Report:
    # the reference runs in this process; a backend under test in a worker process, so that its
    # crash or hang is a broken row instead of the end of the test run
    workers = 0 if backend_name == B.REFERENCE else 1
    try:
        report = suite.run(backend_name, profile, {family}, generated=family in GENERATED_FAMILIES,
                           seed=seed, workers=workers)
    except B.NotAvailable as e:
        pytest.fail(str(e))
    merged = reports.setdefault(backend_name, dataclasses.replace(report, outcomes=[], seconds=0.0))
    merged.outcomes.extend(report.outcomes)
    merged.seconds += report.seconds
    return report


@pytest.mark.parametrize("family", CORPUS_FAMILIES + list(GENERATED_FAMILIES))
def test_family(backend_name: str, family: str, profile, conformance_seed: int, reports) -> None:
    report = _run(backend_name, family, profile, conformance_seed, reports)
    assert report.outcomes, f"no cases ran for {family}"
    assert report.ok, f"{backend_name} disagrees with the interpreter:\n{report.details()}"
