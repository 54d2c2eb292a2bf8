"""The ci profile runs every op x dtype pair the curated corpus can reach."""

from __future__ import annotations

import dataclasses

import pytest

from tiles.conformance import coverage
from tiles.conformance.profiles import CI, THOROUGH
from tiles.conformance.suite import Plan, planned_cases


def test_ci_covers_every_expected_pair():
    assert coverage.expected(), "coverage_expected.json is missing"
    seen = coverage.traced_pairs(planned_cases(Plan("interpreter", CI, generated=False)))
    assert not coverage.missing(seen), coverage.missing(seen)


def test_selection_names_existing_cases():
    everything = {c.id for c in planned_cases(Plan("interpreter", dataclasses.replace(CI, case_budget=None),
                                                   generated=False))}
    assert CI.selected_ids() and CI.selected_ids() <= everything


@pytest.mark.slow
def test_expected_pairs_are_those_of_the_thorough_corpus():
    pairs = coverage.traced_pairs(planned_cases(Plan("interpreter", THOROUGH, generated=False)))
    assert pairs == coverage.expected(), "rewrite them: python -m conformance.coverage --write"
