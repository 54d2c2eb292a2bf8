"""Comparison rules and the unsupported-op accounting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tiles.backends.base import Target
from tiles.backends.interpreter import InterpreterBackend
from tiles.conformance import reproducer, suite
from tiles.conformance.compare import EXACT, EXACT_ZERO_SIGN_FREE, MULTISET, SORTED, compare, tol, ulp
from tiles.conformance.profiles import CI
from tiles.conformance.runner import PASSED, UNSUPPORTED
from tiles.core.errors import UnsupportedError
from tiles.core.ops import Op


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


def test_multiset_keeps_the_sign_of_zero_whatever_the_order():
    assert compare(f32([-0.0, 0.0, 0.0]), f32([0.0, 0.0, -0.0]), MULTISET) is None
    assert compare(f32([-0.0, 0.0, 0.0]), f32([0.0, 0.0, 0.0]), MULTISET) is not None
    assert compare(f32([np.nan, 1.0]), f32([1.0, -np.nan]), MULTISET) is None


def _sorted_cases():
    nan2 = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    ok = [(f32([[-1.0, -0.0, 0.0, 0.0, np.nan]]), f32([[-1.0, 0.0, -0.0, 0.0, nan2]]))]
    bad = [(f32([[-0.0, 0.0]]), f32([[0.0, 0.0]])),             # a zero lost its sign
           (f32([[1.0, 2.0]]), f32([[2.0, 1.0]])),              # numbers out of place
           (f32([[0.0, -0.0], [0.0, 0.0]]), f32([[0.0, 0.0], [-0.0, 0.0]]))]  # signs per row
    return ok, bad


def test_sorted_lets_signed_zeros_trade_places_and_keeps_them():
    ok, bad = _sorted_cases()
    for ref, got in ok:
        assert compare(ref, got, SORTED) is None
    for ref, got in bad:
        assert compare(ref, got, SORTED) is not None
    assert compare(np.array([[1, 2]]), np.array([[2, 1]]), SORTED) is not None


def test_reproducer_applies_the_same_sorted_and_multiset_rules():
    text = reproducer.render("t", "kernel = None", [], (1,), {}, {}, {},
                             InterpreterBackend(), "t.py")
    scope: dict = {"__name__": "repro"}
    exec(compile(text, "t.py", "exec"), scope)
    close = scope["_close"]
    ok, bad = _sorted_cases()
    for ref, got in ok:
        assert close(ref, got, "sorted", 0, 0.0, 0.0, False, None).all()
    for ref, got in bad:
        assert not close(ref, got, "sorted", 0, 0.0, 0.0, False, None).all()
    assert not close(f32([-0.0, 0.0, 0.0]), f32([0.0, 0.0, 0.0]), "multiset", 0, 0.0, 0.0, True, None).all()
    assert close(f32([-0.0, 0.0, 0.0]), f32([0.0, 0.0, -0.0]), "multiset", 0, 0.0, 0.0, True, None).all()


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


class _Approximate(InterpreterBackend):
    """The interpreter declaring an approximate float32 exp (as the CUDA backend does)."""
    name = "interpreter-declaring"

    def target(self) -> Target:
        return dataclasses.replace(super().target(), approximate=((Op.EXP, 1e-5, 0.0),))


def test_declared_approximation_loosens_float32_outputs_of_kernels_using_the_op():
    from tiles.conformance.runner import declared_rule
    be = _Approximate()
    loose = declared_rule(ulp(4), np.dtype(np.float32), {Op.EXP, Op.ADD}, be)
    assert compare(f32(1.0), f32(1.0 + 5e-6), loose) is None
    assert compare(f32(1.0), f32(1.0 + 5e-6), ulp(4)) is not None
    assert declared_rule(ulp(4), np.dtype(np.float32), {Op.LOG}, be) == ulp(4)  # op not in the kernel
    assert declared_rule(ulp(4), np.dtype(np.float64), {Op.EXP}, be) == ulp(4)  # float64 is not approximated


def test_declared_approximations_are_reported():
    report = suite.run(_Approximate(), CI, families={"math"}, keyword="exp[float32]", generated=False)
    assert "exp within 1e-05" in report.table() and report.count(PASSED) >= 1
