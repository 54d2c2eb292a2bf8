"""Which backends the language tests run on, and how hard each one is worked."""

from __future__ import annotations

import pytest

from tiles.backends import registry

# cuda-ptx (tests/cuda_ptx_backend.py): CUDA's compilation to PTX without a GPU, then the interpreter
# cuda-sim: CUDA's lowering run on the SIMT simulator (tiles/backends/cuda/simulator/backend.py)
BACKENDS = ("interpreter", "opencl", "cuda", "cuda-ptx", "cuda-sim")
SLOW_BACKENDS = frozenset({"opencl", "cuda-ptx", "cuda-sim"})  # compiles (or simulations) take a while: slow

_status: dict[str, tuple[bool, str]] = {}


def backend_status(name: str) -> tuple[bool, str]:
    """Whether ``name`` can run here (asked once per session: an OpenCL probe builds a program)."""
    if name not in _status:
        try:
            _status[name] = registry.status(name)
        except Exception as e:  # a broken driver is "not available here", with its message
            _status[name] = (False, f"{type(e).__name__}: {e}")
    return _status[name]


def examples_on(backend: str) -> int:
    """Hypothesis examples per property test: each example compiles a kernel on a compiled backend."""
    return 60 if backend == "interpreter" else 8


def backend_param(name: str) -> object:
    """``name`` as a parameter of the ``backend`` fixture: slow where compiles are, skipped (with
    the backend's own reason) where it cannot run."""
    marks: list[pytest.MarkDecorator] = []
    if name in SLOW_BACKENDS:
        marks.append(pytest.mark.slow)
    ok, why = backend_status(name)
    if not ok:
        marks.append(pytest.mark.skip(reason=f"backend {name} is not available here: {why}"))
    return pytest.param(name, marks=marks, id=name)
