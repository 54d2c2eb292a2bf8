"""Every kernel of the corpus (kernels/<project>/*.py) against NumPy, on every backend available here.

A kernel module defines ``check(rng)``: it launches its kernels through
Triton-style wrappers and asserts on the results.  Cases known to fail until
the missing surface lands are listed in expected_failures.py (strict: one
that starts passing fails, so the mark gets removed).
"""

import pytest
from compat_harness import KERNELS, available_backends, kernel_names, load
from expected_failures import EXPECTED_FAILURES, INTERMITTENT_FAILURES, reason


def cases():
    for backend in available_backends():
        for name in kernel_names():
            marks = []
            for table, strict in ((EXPECTED_FAILURES, True), (INTERMITTENT_FAILURES, False)):
                why = reason(table, name, backend)
                if why:
                    marks.append(pytest.mark.xfail(strict=strict, reason=why))
            yield pytest.param(name, backend, marks=marks, id=f"{backend}-{name}")


@pytest.mark.parametrize("name,backend", list(cases()))
def test_kernel(name, backend, on_backend, rng):
    on_backend(backend)
    load(name).check(rng)


def test_corpus_is_large_enough():
    assert len(kernel_names()) >= 40


def test_every_expected_failure_names_a_kernel():
    unknown = (set(EXPECTED_FAILURES) | set(INTERMITTENT_FAILURES)) - set(kernel_names())
    assert not unknown, f"expected_failures.py lists kernels that do not exist: {sorted(unknown)}"


def test_every_kernel_is_in_its_project_folder():
    loose = sorted(p.name for p in KERNELS.glob("*.py"))
    assert not loose, f"kernels/<project>/<name>.py, one folder per source project; not under one: {loose}"
