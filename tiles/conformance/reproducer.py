"""Standalone scripts that reproduce a mismatch: the kernel, its exact inputs, both runs.

The script runs the kernel once with ``TILES_INTERPRET=1`` (the reference) and once
on the backend, compares the outputs with the case's rules and exits 1 on a mismatch.
It needs only numpy, ml_dtypes and tiles (and, for a backend given as
``module:object``, that module): the kernel's source (and that of the jit functions and
constants it uses) is inlined, so it runs anywhere tiles is installed.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import tempfile
import textwrap
import types
from pathlib import Path
from typing import Any

import numpy as np

from tiles.backends import registry
from tiles.backends.base import Backend
from tiles.core.dtypes import DType
from tiles.runtime.jit import JITFunction

from .case import Case
from .compare import Rule

_TEMPLATE = '''\
"""Conformance reproducer: {title}

Run it anywhere tiles is installed:  python {filename}
Exit status 1 and a description when {backend} disagrees with the interpreter (a crash or a
hang of the script is the backend crashing or hanging on this kernel).
"""
import os
import sys

import ml_dtypes  # noqa: F401  (bfloat16 / fp8 inputs)
import numpy as np

import tiles  # noqa: F401
import tiles.language as tl  # noqa: F401

# ---- kernel
{kernel}
# ---- end of kernel


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
    kernel[GRID](*got, **CONSTEXPRS, backend=BACKEND, enable_fp_fusion=False)
    failed = False
    for index, (kind, ulps, rtol, atol, signed_zero, bound) in OUTPUTS.items():
        ok = _close(ref[index], got[index], kind, ulps, rtol, atol, signed_zero, bound)
        if not ok.all():
            failed = True
            print(f"output {{index}}: {{int((~ok).sum())}} of {{ok.size}} elements differ ({{kind}})")
            for idx in np.argwhere(~ok)[:8]:
                idx = tuple(int(i) for i in idx)
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
    if isinstance(value, DType):
        return f"tl.{value.name}"
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        return f"float.fromhex({float(value).hex()!r})"
    if isinstance(value, tuple):
        return "(" + "".join(f"{_literal(v)}, " for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


def readable(value: Any, limit: int = 400) -> str:
    """The values of an input, for a person (the hex next to it is what runs)."""
    if not isinstance(value, np.ndarray):
        return repr(value)
    shown = value.astype(np.float64) if value.dtype.kind == "V" or value.dtype.name in (
        "bfloat16", "float8_e4m3fn", "float8_e5m2") else value
    text = np.array2string(shown, threshold=64, edgeitems=8, max_line_width=96, separator=", ")
    text = f"{value.dtype.name}{list(value.shape)} {text}"
    return text if len(text) <= limit else text[:limit] + " ..."


def _input_lines(inputs: list[Any]) -> str:
    lines = []
    for i, a in enumerate(inputs):
        comment = readable(a).replace("\n", "\n        #   ")
        lines.append(f"        # [{i}] {comment}")
        lines.append(f"        {_literal(a)},")
    return "\n".join(lines)


def _rule_literal(rule: Rule, bound: np.ndarray | None) -> str:
    b = "None" if bound is None else _literal(np.asarray(bound, dtype=np.float64))
    return f"({rule.kind!r}, {rule.ulps}, {rule.rtol!r}, {rule.atol!r}, {rule.signed_zero}, {b})"


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def inline_source(kernel: JITFunction) -> str:
    """The kernel's source with the jit functions, helpers, constants and modules it uses, so the
    script runs without the repository; named ``kernel``."""
    seen: dict[str, str] = {}
    imports: dict[str, str] = {}

    def visit(fn: Any) -> None:
        module = sys.modules[fn.__module__]
        for name in sorted(_code_names(fn.__code__)):
            if name in seen or name in imports or not hasattr(module, name):
                continue
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):
                if value.__name__ not in ("tiles", "tiles.language"):
                    imports[name] = f"import {value.__name__} as {name}"
            elif isinstance(value, JITFunction) or (isinstance(value, types.FunctionType)
                                                    and value.__module__ == fn.__module__):
                inner = value.fn if isinstance(value, JITFunction) else value
                seen[name] = ""
                visit(inner)
                seen[name] = textwrap.dedent(inspect.getsource(inner))
            elif isinstance(value, (int, float, str, bool, DType)) or value is None:
                seen[name] = f"{name} = {_literal(value)}\n"
    visit(kernel.fn)
    own = textwrap.dedent(inspect.getsource(kernel.fn))
    parts = list(imports.values()) + [t for t in seen.values() if t] + [own]
    if kernel.fn.__name__ != "kernel":
        parts.append(f"kernel = {kernel.fn.__name__}\n")
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def render(title: str, kernel_text: str, inputs: list[Any], grid: tuple[int, ...],
           constexprs: dict[str, Any], outputs: dict[int, Rule],
           bounds: dict[int, np.ndarray], backend: Backend, filename: str) -> str:
    constexpr_text = "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in constexprs.items()) + "}"
    return _TEMPLATE.format(
        title=title, filename=filename, backend=backend_spec(backend), kernel=kernel_text.strip(),
        inputs=_input_lines(inputs), grid=tuple(grid),
        constexprs=constexpr_text,
        outputs="\n".join(f"    {i}: {_rule_literal(r, bounds.get(i))}," for i, r in outputs.items()))


def final_path(inflight: str) -> str:
    """Where the reproducer written to ``inflight`` (a worker's program in progress) is kept."""
    text = Path(inflight).read_text()
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    return str(Path(inflight).with_name(f"repro_crash_{digest}.py"))


def write(title: str, kernel_text: str, inputs: list[Any], grid: tuple[int, ...],
          constexprs: dict[str, Any], outputs: dict[int, Rule], bounds: dict[int, np.ndarray],
          backend: Backend, path: str | None = None) -> str:
    """Write the script (to ``path``, or a name made from the title and kernel); returns its path."""
    if path is None:
        digest = hashlib.sha1((title + kernel_text + repr(grid)).encode()).hexdigest()[:10]
        safe = "".join(c if c.isalnum() else "_" for c in title)[:60]
        path = str(repro_dir() / f"repro_{safe}_{digest}.py")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(render(title, kernel_text, inputs, grid, constexprs, outputs, bounds,
                                 backend, path))
    return path


def write_case_reproducer(case: Case, inputs: list[Any], backend: Backend) -> str:
    if case.kernel is None:
        return write_self_check_reproducer(case, backend)
    bounds = case.bounds(inputs) if case.bounds else {}
    return write(f"{case.id} on {backend.name}", inline_source(case.kernel), inputs, case.grid,
                 case.constexprs, case.outputs, bounds, backend)


def write_self_check_reproducer(case: Case, backend: Backend) -> str:
    """A self-checking case (an example program) as a script that runs it on the backend: it exits
    non-zero (or crashes, or hangs) as the case did."""
    if not case.self_check_script:
        raise ValueError(f"{case.id} has no self_check_script to reproduce it with")
    title = f"{case.id} on {backend.name}"
    digest = hashlib.sha1((title + case.self_check_script).encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() else "_" for c in title)[:60]
    path = repro_dir() / f"repro_{safe}_{digest}.py"
    q = '"' * 3
    header = (f"#!/usr/bin/env python\n{q}Reproducer: {title} (a self-checking program, written by the "
              f"tiles conformance suite).\nRun it where tiles and the backend are installed: it fails as "
              f"the case did.{q}\nBACKEND = {backend_spec(backend)!r}\n")
    path.write_text(header + case.self_check_script)
    return str(path)
