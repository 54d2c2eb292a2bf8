"""The suite as pytest tests: one test per (backend, family); the table is printed at the end."""

from __future__ import annotations

import pytest

from conformance import backends as B
from conformance import suite
from conformance.corpus import MODULES
from conformance.generate.search import GENERATED_FAMILIES
from conformance.report import Report

CORPUS_FAMILIES = sorted({c.family for m in MODULES for c in m.cases(suite.profiles_ci())}
                         | {"examples"})


def _run(backend_name: str, family: str, profile, reports: dict[str, Report]) -> Report:
    try:
        report = suite.run(backend_name, profile, {family}, generated=family in GENERATED_FAMILIES)
    except B.NotAvailable as e:
        pytest.fail(str(e))
    merged = reports.setdefault(backend_name, Report(report.backend, profile.name))
    merged.outcomes.extend(report.outcomes)
    return report


@pytest.mark.parametrize("family", CORPUS_FAMILIES + list(GENERATED_FAMILIES))
def test_family(backend_name: str, family: str, profile, reports) -> None:
    report = _run(backend_name, family, profile, reports)
    assert report.outcomes, f"no cases ran for {family}"
    assert report.ok, f"{backend_name} disagrees with the interpreter:\n{report.details()}"
