# ruff: noqa: E501  (the reasons are the exact error messages)
"""Corpus cases that fail today, with the exact error each raises.

Keyed by kernel name, then backend ("*" = every backend).  The reasons are the
errors seen on the interpreter and on OpenCL (pocl); they come from missing
language/runtime surface that other branches are adding.  Remove an entry when
its case passes (the marks are strict, so a passing case fails the run).
"""

EXPECTED_FAILURES: dict[str, dict[str, str]] = {
}

# Cases that fail in some runs only (a race being fixed): not strict.
INTERMITTENT_FAILURES: dict[str, dict[str, str]] = {}


def reason(table: dict[str, dict[str, str]], name: str, backend: str) -> str | None:
    """Why ``name`` is expected to fail on ``backend`` according to ``table``, or None."""
    entry = table.get(name, {})
    return entry.get(backend, entry.get("*"))
