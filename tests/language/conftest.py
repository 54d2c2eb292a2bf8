"""The language tests run on every backend available here, from one parametrization.

Every test gets the autouse ``backend`` fixture: it is parametrized over ``BACKENDS`` (the test
id ends in ``[interpreter]``, ``[opencl]``, ``[cuda]``) and selects that backend with
``tiles.set_backend`` for the test, so a plain ``kernel[grid](...)`` runs there.

- The interpreter always runs.  OpenCL runs when a device builds programs (pocl in CI); its
  cases are marked ``slow`` (each pocl compile takes seconds), so the quick suite keeps the
  interpreter and CI's slow part covers OpenCL.  CUDA runs when a GPU and its driver are present.
  A backend that cannot run here skips, with the reason the backend gives.
- ``@pytest.mark.backends("interpreter", ...)`` limits a test to some backends; use it only for
  tests about one backend (the interpreter's own checks, generated OpenCL text...).
- ``@pytest.mark.known_failure_on(backend, reason, strict=True)``: a known bug of that backend
  (an xfail for that backend only; strict, so a fix makes the test fail until the mark goes).
- ``@pytest.mark.unsupported_on(backend, match)``: the backend declares the test's op or dtype
  unsupported.  The test then passes only if the launch raises ``UnsupportedError`` whose message
  matches ``match`` (it is never skipped).  Put the declarations in ``UNSUPPORTED`` below when
  they apply to a whole test function.
"""

from __future__ import annotations

import re

import pytest
from lang_backends import BACKENDS, backend_param

import tiles
from tiles import UnsupportedError

# (backend, test function name) -> what the backend's UnsupportedError says (a regex).
UNSUPPORTED: dict[tuple[str, str], str] = {
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends(*names): run this language test on these backends only")
    config.addinivalue_line("markers", "unsupported_on(backend, match): the backend must refuse this "
                                       "test with an UnsupportedError matching `match`")
    config.addinivalue_line("markers", "known_failure_on(backend, reason, strict=True): a known bug of "
                                       "that backend: expected to fail there")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("backend") if callspec else None
        for mark in item.iter_markers("known_failure_on"):
            if name is not None and mark.args[0] == name:
                item.add_marker(pytest.mark.xfail(reason=f"{name}: {mark.args[1]}",
                                                  strict=mark.kwargs.get("strict", True)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("backends")
    names = only.args if only else BACKENDS
    unknown = set(names) - set(BACKENDS)
    assert not unknown, f"{metafunc.definition.nodeid}: unknown backends {sorted(unknown)}"
    metafunc.parametrize("backend", [backend_param(n) for n in names], indirect=True)


@pytest.fixture(autouse=True)
def backend(request: pytest.FixtureRequest):
    """The backend this test runs on; selected for every launch in the test."""
    name = request.param
    tiles.set_backend(name)
    yield name
    tiles.set_backend(None)


def expected_refusal(item: pytest.Item) -> str | None:
    """The message ``item``'s backend must refuse it with, or None when it must run."""
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("backend") if callspec else None
    if name is None:
        return None
    for mark in item.iter_markers("unsupported_on"):
        if mark.args[0] == name:
            return mark.args[1]
    return UNSUPPORTED.get((name, getattr(item, "originalname", item.name)))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    match = expected_refusal(pyfuncitem)
    if match is None:
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    with pytest.raises(UnsupportedError) as info:
        pyfuncitem.obj(**args)
    assert re.search(match, str(info.value)), \
        f"{pyfuncitem.callspec.params['backend']} refused the test, but not for the declared reason " \
        f"{match!r}: {info.value}"
    return True
