"""What torch sees of the alias: no Triton package.

torch decides once per process whether Triton is installed (``torch.utils._triton.
has_triton_package``, a cached function) and, when it is, treats ``triton.runtime.jit.
JITFunction`` objects as Triton kernels that dynamo captures and inductor compiles with Triton's
own compiler, and imports ``triton.backends.compiler`` (which tiles has not).  With the alias that
would fail or be wrong, so tiles answers that question for torch before anyone else asks it: the
first time ``torch.utils._triton`` is imported (or now, if it was), ``has_triton_package()`` is
called with the alias hidden and caches False.  Then ``torch.compile`` treats a tiles kernel
launch as ordinary Python and inductor generates C++ for CPU tensors, as on a machine without
Triton.  dynamo is also told to skip tiles' own files (``torch._dynamo.trace_rules.add``, when
dynamo loads): a launch is a graph break and runs eagerly, rather than dynamo tracing the
launcher and the NumPy interpreter.

A few torch modules import ``triton`` without that check (``torch._inductor.runtime.
triton_compat``); the names they need at import time exist (``triton.compiler.CompiledKernel``,
``triton.compiler.compiler.triton_key``), and what they do with them is guarded by the check above.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class _NoTriton(importlib.abc.MetaPathFinder):
    """Refuses ``triton`` (a real install included) while torch's answer is being primed."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "triton" or fullname.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@contextmanager
def _hidden() -> Iterator[None]:
    saved = {n: m for n, m in sys.modules.items() if n == "triton" or n.startswith("triton.")}
    for name in saved:
        del sys.modules[name]
    blocker = _NoTriton()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
        sys.modules.update(saved)


def prime(module: types.ModuleType) -> None:
    """Make ``module`` (torch.utils._triton) answer "no Triton package" from now on."""
    check = getattr(module, "has_triton_package", None)
    if check is None:
        return
    clear = getattr(check, "cache_clear", None)
    if clear is not None:
        clear()
    with _hidden():
        check()
    for name in ("has_triton", "get_triton_version", "has_triton_tma", "has_triton_tma_device"):
        stale = getattr(getattr(module, name, None), "cache_clear", None)
        if stale is not None:
            stale()  # (answers computed from the old one)


def skip_tiles(module: types.ModuleType) -> None:
    """Make dynamo (``module``: torch._dynamo.trace_rules) leave tiles' files untraced."""
    add = getattr(module, "add", None)
    if add is not None:
        add("tiles")


WATCHED: dict[str, Callable[[types.ModuleType], None]] = {
    "torch.utils._triton": prime,
    "torch._dynamo.trace_rules": skip_tiles,
}


class _Loader(importlib.abc.Loader):
    """Runs a watched module's own loader, then its callback."""

    def __init__(self, inner: Any, then: Callable[[types.ModuleType], None]) -> None:
        self.inner, self.then = inner, then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        self.then(module)


class _OnImport(importlib.abc.MetaPathFinder):
    """Calls ``WATCHED[name]`` on a watched torch module right after it is first executed."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        then = WATCHED.get(fullname)
        if then is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, then)
        return spec


_HOOK = _OnImport()


def hide_from_torch() -> None:
    """Tell each watched torch module now if torch loaded it, else when it loads."""
    for name, then in WATCHED.items():
        loaded = sys.modules.get(name)
        if loaded is not None:
            then(loaded)
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def stop_hiding() -> None:
    while _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)
