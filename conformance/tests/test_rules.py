"""Comparison rules and the unsupported-op accounting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tiles.backends.base import Target
from tiles.backends.interpreter import InterpreterBackend
from tiles.core.errors import UnsupportedError
from tiles.core.ops import Op

from conformance import suite
from conformance.compare import EXACT, EXACT_ZERO_SIGN_FREE, MULTISET, compare, tol, ulp
from conformance.profiles import CI
from conformance.runner import PASSED, UNSUPPORTED


def f32(*values):
    return np.array(values, dtype=np.float32)


def test_exact_matches_nan_with_nan_but_not_with_numbers():
    assert compare(f32(np.nan, 1.0), f32(np.nan, 1.0), EXACT) is None
    assert compare(f32(np.nan), f32(0.0), EXACT) is not None
    assert compare(f32(0.0), f32(np.nan), ulp(1000)) is not None


def test_sign_of_zero():
    assert compare(f32(0.0), f32(-0.0), EXACT) is not None
    assert compare(f32(0.0), f32(-0.0), EXACT_ZERO_SIGN_FREE) is None


def test_ulp_distance_is_counted_in_representable_steps():
    one = f32(1.0)
    three_up = np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2).astype(np.float32)
    assert compare(one, three_up, ulp(3)) is None
    assert compare(one, three_up, ulp(2)) is not None
    assert compare(f32(np.inf), f32(-np.inf), ulp(4)) is not None


def test_tolerance_with_per_element_bound():
    ref, got = f32(1.0, 100.0), f32(1.5, 100.0)
    assert compare(ref, got, tol(0.0), atol=np.array([0.6, 0.0])) is None
    assert compare(ref, got, tol(0.0), atol=np.array([0.1, 0.0])) is not None


def test_integers_ignore_tolerances_and_multiset_ignores_order():
    assert compare(np.array([5], np.int32), np.array([6], np.int32), ulp(10)) is not None
    assert compare(np.array([[1, 2, 3]]), np.array([[3, 1, 2]]), MULTISET) is None
    assert compare(np.array([[1, 2, 3]]), np.array([[3, 3, 2]]), MULTISET) is not None


class NoDot(InterpreterBackend):
    name = "test-no-dot"

    def target(self) -> Target:
        return dataclasses.replace(super().target(), unsupported_ops=frozenset({Op.DOT}))


class RefusesAtCompile(InterpreterBackend):
    name = "test-refuses-atomics"

    def compile(self, kernel, options):
        if any(i.op is Op.ATOMIC for i in kernel.walk()):
            raise UnsupportedError("atomics are not implemented here")
        return super().compile(kernel, options)


@pytest.mark.parametrize("backend, family", [(NoDot(), "dot"), (RefusesAtCompile(), "atomics")])
def test_unsupported_is_reported_never_passed(backend, family):
    report = suite.run(backend, CI, {family}, generated=False)
    statuses = {o.status for o in report.outcomes}
    assert UNSUPPORTED in statuses
    if family == "dot":
        assert PASSED not in statuses
    assert report.to_json()["families"][family]["unsupported"] == report.count(UNSUPPORTED) > 0
