"""pytest plugin for ``benchmarks/triton_unit_tests.py``: runs a chosen list of test ids, records
each test's outcome as one JSON line as soon as it ends, and stops a test that runs too long.

Loaded with ``-p triton_unit_plugin`` (this folder on ``PYTHONPATH``); driven by environment
variables the driver sets:

- ``UH_OUT``: the JSON-lines file outcomes are appended to (``start`` lines mark a test in flight,
  so a process that dies leaves the culprit named).
- ``UH_SELECT``: a file of test ids, one a line; the others are deselected.  Unset: collect only,
  and write every collected id to ``UH_OUT`` (``{"collected": id}``).
- ``UH_TIMEOUT``: seconds a test may run (SIGALRM; the test then fails as ``timeout``).
- ``UH_INTERNAL_TESTING``: path of the installed Triton's ``_internal_testing.py``.  On the tiles
  side (``TILES_AS_TRITON=1``) Triton's test helpers are loaded from it as
  ``triton._internal_testing``, with the few Triton-internal names they import supplied here;
  the helpers are Triton's, run unchanged, and are no part of tiles.

On tiles' sides each record also holds ``launches``: how many launches of the case went to tiles'
OpenCL runtime (``opencl``) and to tiles' interpreter (``interpreter``), counted by wrapping
``tiles.backends.opencl.runtime.launch`` and ``tiles.interp.interpret`` (what the backends' launches
call); a ``{"backend": name}`` line names the backend ``tiles`` picked for launches at start.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import signal
import sys
import time
import types
from typing import Any

import pytest

# Source text of a test that reads what Triton's compiler produced (IR text, the kernel cache,
# generated code): tiles has no such artefacts, so these cases are their own category.
INTERNALS = re.compile(
    r"\.asm\b|\basm\[|[\"'](ttir|ttgir|llir|ptx|amdgcn|cubin|hsaco|ttgir)[\"']|\bttgir\b|\bttir\b"
    r"|kernel\.cache\b|\.device_caches\b|_unsafe_update_src|\.n_spills\b|\.n_regs\b|\bFileCheck\b"
    r"|run_filecheck|\bknobs\.compilation\.listener\b|\.warmup\(")


class UnitTimeout(BaseException):
    """A test ran past ``UH_TIMEOUT`` seconds."""


_out: Any = None
_selected: set[str] | None = None
_internals: dict[str, str] = {}
_phases: dict[str, dict[str, Any]] = {}
_launches: dict[str, int] = {}


def _write(record: dict[str, Any]) -> None:
    _out.write(json.dumps(record) + "\n")
    _out.flush()


def _install_internal_testing() -> None:
    """Load Triton's own test helpers as ``triton._internal_testing`` over tiles' alias."""
    path = os.environ.get("UH_INTERNAL_TESTING")
    if not path or "triton._internal_testing" in sys.modules:
        return
    import numpy as np
    import torch
    import triton  # tiles, through the alias
    import triton.language as tl
    import triton.runtime.jit as jit

    warm = types.ModuleType("triton._compile_warmup_state")
    warm.is_compile_warmup = lambda: False  # type: ignore[attr-defined]
    sys.modules.setdefault("triton._compile_warmup_state", warm)
    if "triton.backends" not in sys.modules:
        backends = types.ModuleType("triton.backends")
        backends.backends = {}  # type: ignore[attr-defined]
        sys.modules["triton.backends"] = backends

    class TensorWrapper:  # used only where tiles has none (tiles' own: tiles.runtime.jit.TensorWrapper)
        pass

    for name, value in (("TensorWrapper", TensorWrapper), ("reinterpret", triton.reinterpret),
                        ("type_canonicalisation_dict", {})):
        if not hasattr(jit, name):
            setattr(jit, name, value)
    spec = importlib.util.spec_from_file_location("triton._internal_testing", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["triton._internal_testing"] = module
    spec.loader.exec_module(module)
    def str_to_triton_dtype(name: str) -> Any:
        """Triton's ``tl.str_to_ty(type_canonicalisation_dict[name])``: a ``tl`` attribute, else the
        spelling (``"float8_e4m3fn"``, ``"bool"``) as ``tl.dtype`` reads it."""
        value = getattr(tl, name, None)
        return value if isinstance(value, tl.dtype) else tl.dtype(name)

    module.str_to_triton_dtype = str_to_triton_dtype  # type: ignore[attr-defined]
    module.is_interpreter = lambda: True  # type: ignore[attr-defined]
    _ = (np, torch)
    _install_filecheck_stub()


def _install_filecheck_stub() -> None:
    """``triton._filecheck`` (test_frontend imports it at module level): Triton's FileCheck of the
    IR its code generator prints, compiler internals tiles has none of.  Each helper raises, naming
    itself, so the file imports and its other tests (``@triton.aggregate`` on the host...) run."""
    if "triton._filecheck" in sys.modules:
        return
    stub = types.ModuleType("triton._filecheck")

    def internals(name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(f"triton._filecheck.{name}: Triton's IR FileCheck (compiler internals)")
        return refuse

    def filecheck_test(fn: Any) -> Any:
        test = internals("filecheck_test")
        test.__name__ = getattr(fn, "__name__", "filecheck_test")
        return test

    for name in ("run_filecheck", "run_filecheck_test", "run_parser"):
        setattr(stub, name, internals(name))
    stub.filecheck_test = filecheck_test  # type: ignore[attr-defined]
    sys.modules["triton._filecheck"] = stub


def pytest_configure(config: Any) -> None:
    global _out, _selected
    _out = open(os.environ["UH_OUT"], "a")
    sel = os.environ.get("UH_SELECT")
    if sel:
        with open(sel) as f:
            _selected = {line.rstrip("\n") for line in f if line.strip()}
    if os.environ.get("TILES_AS_TRITON"):
        _install_internal_testing()
        _install_launch_probe()


def _install_launch_probe() -> None:
    """Count launches per backend (see the module's docstring)."""
    import tiles.interp
    from tiles.backends import registry

    def counting(module: Any, attr: str, name: str) -> None:
        inner = getattr(module, attr)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _launches[name] = _launches.get(name, 0) + 1
            return inner(*args, **kwargs)
        setattr(module, attr, wrapper)

    counting(tiles.interp, "interpret", "interpreter")
    try:
        import tiles.backends.opencl.runtime as ocl
    except Exception:  # no pyopencl: nothing launches there
        pass
    else:
        counting(ocl, "launch", "opencl")
    try:
        _write({"backend": registry.default().name})
    except Exception as e:
        _write({"backend": f"none: {e}"[:200]})


def _internals_reason(item: Any) -> str:
    fn = getattr(item, "function", None)
    if fn is None:
        return ""
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    m = INTERNALS.search(src)
    return m.group(0).strip("'\"[") if m else ""


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    if _selected is None:
        for item in items:
            _write({"collected": item.nodeid, "internals": _internals_reason(item)})
        items[:] = []
        return
    keep = [item for item in items if item.nodeid in _selected]
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in _selected])
    items[:] = keep
    for item in keep:
        _internals[item.nodeid] = _internals_reason(item)


def _alarm(signum: int, frame: Any) -> None:
    raise UnitTimeout(f"ran past {os.environ.get('UH_TIMEOUT')} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    _write({"start": item.nodeid})
    _phases[item.nodeid] = {"t0": time.time()}
    _launches.clear()
    limit = float(os.environ.get("UH_TIMEOUT", "0") or 0)
    if limit:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        if limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
    info = _phases.pop(item.nodeid, {})
    record = {"nodeid": item.nodeid, "outcome": info.get("outcome", "error"),
              "reason": info.get("reason", ""), "seconds": round(time.time() - info.get("t0", time.time()), 2)}
    if _internals.get(item.nodeid):
        record["internals"] = _internals[item.nodeid]
    if _launches:
        record["launches"] = dict(_launches)
    _write(record)
    if record["outcome"] == "timeout" and os.environ.get("TILES_BACKEND"):
        # the alarm stopped the host, not the device: a kernel may still run on the backend's queue,
        # and the next case's launch would wait behind it.  End the process; the driver starts a
        # fresh one for the cases left.
        _out.close()
        os._exit(3)


def _first_line(report: Any) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return str(crash.message).strip().splitlines()[0][:300] if str(crash.message).strip() else ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return str(longrepr[2])[:300]
    text = str(longrepr)
    lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    return (lines[0] if lines else text.strip().splitlines()[-1] if text.strip() else "")[:300]


def pytest_runtest_logreport(report: Any) -> None:
    info = _phases.get(report.nodeid)
    if info is None:
        return
    if info.get("outcome") in ("failed", "error", "timeout"):
        return  # the first bad phase decides
    if report.when == "setup" and report.outcome != "passed":
        info["outcome"] = "skipped" if report.skipped else "error"
        info["reason"] = _first_line(report)
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            info["outcome"] = "xfail" if report.skipped else "xpass"
            info["reason"] = str(report.wasxfail)[:300]
        else:
            info["outcome"] = report.outcome
            info["reason"] = _first_line(report) if report.outcome != "passed" else ""
        if report.outcome == "failed" and "UnitTimeout" in str(report.longrepr):
            info["outcome"] = "timeout"
    elif report.when == "teardown" and report.outcome == "failed":
        info["outcome"] = "error"
        info["reason"] = "teardown: " + _first_line(report)
