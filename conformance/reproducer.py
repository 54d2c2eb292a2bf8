"""Standalone scripts that reproduce a mismatch: the kernel, its exact inputs, both runs.

The script runs the kernel once with ``TILES_INTERPRET=1`` (the reference) and once
on the backend, compares the outputs with the case's rules and exits 1 on a mismatch.
It needs only numpy, ml_dtypes and tiles (and, for a backend given as
``module:object``, that module).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from tiles.backends import registry
from tiles.backends.base import Backend

from .case import Case
from .compare import Rule

_TEMPLATE = '''\
"""Conformance reproducer: {title}

Run from the repository root:  PYTHONPATH=. python {filename}
Exit status 1 and a description when {backend} disagrees with the interpreter.
"""
import os
import sys

import ml_dtypes  # noqa: F401  (bfloat16 / fp8 inputs)
import numpy as np

import tiles  # noqa: F401
import tiles.language as tl  # noqa: F401

{kernel}


def _array(hexdata, dtype, shape):
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))
    return np.frombuffer(bytes.fromhex(hexdata), dtype=dt).reshape(shape).copy()


def make_inputs():
    return [
{inputs}
    ]


GRID = {grid!r}
CONSTEXPRS = {constexprs}
BACKEND = {backend!r}
# output position -> (rule kind, ulps, rtol, atol, sign of zero matters, per-element atol or None)
OUTPUTS = {{
{outputs}
}}


def _bits(a):
    return a.view({{1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}}[a.dtype.itemsize])


def _ordered(a):
    b = _bits(a).astype(np.int64)
    sign = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(b & sign, -(b & ~sign), b)


def _total_sort(a):
    """Along the last axis; floats: -0.0 before +0.0, NaNs last."""
    if a.ndim == 0 or a.dtype.kind in "biu":
        return np.sort(a, axis=-1)
    w = a.astype(np.float64)
    bits = np.where(np.isnan(w), np.nan, w).view(np.int64)
    key = np.where(bits < 0, -(bits & np.int64(2**63 - 1)) - 1, bits)
    return np.take_along_axis(a, np.argsort(key, axis=-1, kind="stable"), axis=-1)


def _close(ref, got, kind, ulps, rtol, atol, signed_zero, bound):
    if kind == "multiset":
        ref, got = _total_sort(ref), _total_sort(got)
        kind = "exact"
    if kind == "sorted" and ref.ndim:  # a sort: -0.0 and +0.0 may trade places, values kept
        return _close(ref, got, "exact", 0, 0.0, 0.0, False, None) & \
            _close(_total_sort(ref), _total_sort(got), "exact", 0, 0.0, 0.0, True, None)
    if ref.dtype.kind in "biu":
        return ref == got
    r, g = ref.astype(np.float64), got.astype(np.float64)
    ok = (_bits(ref) == _bits(got)) | (np.isnan(r) & np.isnan(g))
    if not signed_zero:
        ok |= (r == 0) & (g == 0)
    if kind == "ulp":
        ok |= (np.isfinite(r) | np.isfinite(g)) & (np.abs(_ordered(ref) - _ordered(got)) <= ulps)
    elif kind == "tol":
        limit = rtol * np.abs(r) + (atol if bound is None else bound)
        with np.errstate(all="ignore"):
            ok |= np.abs(g - r) <= limit
    return ok


def main():
    os.environ["TILES_INTERPRET"] = "1"
    ref = make_inputs()
    kernel[GRID](*ref, **CONSTEXPRS)
    del os.environ["TILES_INTERPRET"]
    got = make_inputs()
    kernel[GRID](*got, **CONSTEXPRS, backend=BACKEND)
    failed = False
    for index, (kind, ulps, rtol, atol, signed_zero, bound) in OUTPUTS.items():
        ok = _close(ref[index], got[index], kind, ulps, rtol, atol, signed_zero, bound)
        if not ok.all():
            failed = True
            print(f"output {{index}}: {{int((~ok).sum())}} of {{ok.size}} elements differ ({{kind}})")
            for idx in np.argwhere(~ok)[:8]:
                idx = tuple(idx)
                print(f"  at {{idx}}: interpreter {{ref[index][idx]!r}}, {{BACKEND}} {{got[index][idx]!r}}")
    print("MISMATCH" if failed else "outputs agree")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
'''


def repro_dir() -> Path:
    path = Path(os.environ.get("TILES_CONFORMANCE_REPRO_DIR") or
                Path(tempfile.gettempdir()) / "tiles-conformance")
    path.mkdir(parents=True, exist_ok=True)
    return path


def backend_spec(backend: Backend) -> str:
    """A string ``registry.get`` resolves to this backend in a fresh process."""
    if backend.name in registry.known() and type(backend).__name__ == \
            registry.known()[backend.name].rpartition(":")[2].rpartition(".")[2]:
        return backend.name
    cls = type(backend)
    return f"{cls.__module__}:{cls.__qualname__}"


def _literal(value: Any) -> str:
    if isinstance(value, np.ndarray):
        hexdata = np.ascontiguousarray(value).tobytes().hex()
        return f"_array({hexdata!r}, {value.dtype.name!r}, {tuple(value.shape)!r})"
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        return f"float.fromhex({float(value).hex()!r})"
    return repr(value)


def _rule_literal(rule: Rule, bound: np.ndarray | None) -> str:
    b = "None" if bound is None else _literal(np.asarray(bound, dtype=np.float64))
    return f"({rule.kind!r}, {rule.ulps}, {rule.rtol!r}, {rule.atol!r}, {rule.signed_zero}, {b})"


def render(title: str, kernel_text: str, inputs: list[Any], grid: tuple[int, ...],
           constexprs: dict[str, Any], outputs: dict[int, Rule],
           bounds: dict[int, np.ndarray], backend: Backend, filename: str) -> str:
    constexpr_text = "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in constexprs.items()) + "}"
    return _TEMPLATE.format(
        title=title, filename=filename, backend=backend_spec(backend), kernel=kernel_text.strip(),
        inputs="\n".join(f"        {_literal(a)}," for a in inputs), grid=tuple(grid),
        constexprs=constexpr_text,
        outputs="\n".join(f"    {i}: {_rule_literal(r, bounds.get(i))}," for i, r in outputs.items()))


def write(title: str, kernel_text: str, inputs: list[Any], grid: tuple[int, ...],
          constexprs: dict[str, Any], outputs: dict[int, Rule], bounds: dict[int, np.ndarray],
          backend: Backend) -> str:
    """Write the script; returns its path."""
    digest = hashlib.sha1((title + kernel_text + repr(grid)).encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() else "_" for c in title)[:60]
    path = repro_dir() / f"repro_{safe}_{digest}.py"
    path.write_text(render(title, kernel_text, inputs, grid, constexprs, outputs, bounds,
                           backend, str(path)))
    return str(path)


def write_case_reproducer(case: Case, inputs: list[Any], backend: Backend) -> str:
    bounds = case.bounds(inputs) if case.bounds else {}
    return write(f"{case.id} on {backend.name}", case.import_line, inputs, case.grid,
                 case.constexprs, case.outputs, bounds, backend)
