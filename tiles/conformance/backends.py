"""Choosing the backend under test: a registered name, an entry point, or ``module:object``."""

from __future__ import annotations

from tiles.backends import registry
from tiles.backends.base import Backend

REFERENCE = "interpreter"


class NotAvailable(Exception):  # noqa: N818  (reads as a state)
    pass


def resolve(backend: str | Backend) -> Backend:
    """The backend to test; raises NotAvailable (with the reason) when it cannot run here."""
    if isinstance(backend, Backend):
        chosen = backend
    else:
        try:
            chosen = registry.get(backend)
        except registry.BackendUnavailable as e:
            raise NotAvailable(str(e)) from None
    ok, why = chosen.available()
    if not ok:
        raise NotAvailable(f"backend {chosen.name!r} is not available: {why}")
    return chosen


def reference() -> Backend:
    return registry.get(REFERENCE)


def available() -> list[str]:
    """Every known backend (built-in or entry point) that can run on this machine."""
    return [name for name in registry.known() if registry.status(name)[0]]
