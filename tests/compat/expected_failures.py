# ruff: noqa: E501  (the reasons are the exact error messages)
"""Corpus cases that fail today, with the exact error each raises.

Keyed by kernel name, then backend ("*" = every backend).  The reasons are the
errors seen on the interpreter and on OpenCL (pocl); they come from missing
language/runtime surface that other branches are adding.  Remove an entry when
its case passes (the marks are strict, so a passing case fails the run).
"""

EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    # torchao's MX "floor" scaling relies on Triton-on-CUDA's saturating fp32 -> float8e4nv
    # (cvt.rn.satfinite); tiles converts as ml_dtypes does (past 448: NaN), docs/porting-from-triton.md
    "ao_mxfp8_quantize": {"*": "fp32 -> float8e4nv past 448 gives NaN (ml_dtypes), Triton on CUDA saturates to 448"},
}

# Cases that fail in some runs only (a race being fixed): not strict.
INTERMITTENT_FAILURES: dict[str, dict[str, str]] = {}


def reason(table: dict[str, dict[str, str]], name: str, backend: str) -> str | None:
    """Why ``name`` is expected to fail on ``backend`` according to ``table``, or None."""
    entry = table.get(name, {})
    return entry.get(backend, entry.get("*"))
