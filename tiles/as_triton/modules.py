"""The ``triton`` package as tiles: which Triton module names resolve to which tiles modules, the
``triton`` top-level module itself, and the import hook that serves them.

Only the modules that kernels and host code use are served (``TRITON_MODULES``); anything else
under ``triton.`` (``triton.backends``, ``triton._C``...) is not found, as it would be for a
Triton without that part, so code that probes for it takes its fallback.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import sys
import types
from collections.abc import Iterator
from typing import Any

from .. import config

# The Triton release whose language tiles implements: docs/porting-from-triton.md checks every
# public name, the launch options and the driver against Triton 3.9.  Libraries branch on it
# (``Version(triton.__version__) >= "3.0.0"``, ``>= "3.6.0"`` for newer spellings).
TRITON_VERSION = "3.9.0"

# Triton module name -> the tiles module that plays it.
TRITON_MODULES: dict[str, str] = {
    "triton.language": "tiles.language",
    "triton.language.core": "tiles.language.core",
    "triton.language.math": "tiles.language.math",
    "triton.language.random": "tiles.language.random",
    "triton.language.semantic": "tiles.language.semantic",
    "triton.language.standard": "tiles.language.standard",
    "triton.language.extra": "tiles.language.extra",
    "triton.language.extra.libdevice": "tiles.language.extra.libdevice",
    "triton.language.extra.cuda": "tiles.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tiles.language.extra.cuda.libdevice",
    "triton.language.extra.cuda.gdc": "tiles.language.extra.cuda",
    "triton.language.extra.hip": "tiles.language.extra.hip",
    "triton.language.extra.hip.libdevice": "tiles.language.extra.hip.libdevice",
    "triton.runtime": "tiles.runtime",
    "triton.runtime.autotuner": "tiles.runtime.autotuner",
    "triton.runtime.driver": "tiles.runtime.driver",
    "triton.runtime.errors": "tiles.runtime.errors",
    "triton.runtime._allocation": "tiles.runtime.allocation",
    "triton.runtime.jit": "tiles.runtime.jit",
    "triton.compiler": "tiles.compiler",
    "triton.compiler.compiler": "tiles.compiler",
    "triton.compiler.errors": "tiles.compiler.errors",
    "triton.errors": "tiles.runtime.errors",
    "triton.testing": "tiles.as_triton.testing",
    "triton.tools": "tiles.tools",
    "triton.tools.tensor_descriptor": "tiles.tools.tensor_descriptor",
    "triton.tools.mxfp": "tiles.tools.mxfp",
    "triton.knobs": "tiles.knobs",
    "triton.profiler": "tiles.profiler",
    "triton.profiler.viewer": "tiles.profiler.viewer",
}


def _top_level() -> types.ModuleType:
    """A fresh ``triton`` module: tiles' public names, Triton's version, its submodules on demand."""
    tiles = sys.modules["tiles"]  # (loaded: this module is part of it)
    top = types.ModuleType("triton", "Triton's names, served by tiles (tiles.install_as_triton).")
    for name in [*tiles.__all__, "cdiv", "next_power_of_2", "set_allocator"]:
        setattr(top, name, getattr(tiles, name))
    setattr(top, "__version__", TRITON_VERSION)  # noqa: B010
    top.__path__ = []  # a package: ``import triton.language`` asks the finder below
    top.__spec__ = importlib.machinery.ModuleSpec("triton", _FINDER, is_package=True)
    top.__loader__ = _FINDER
    top.__package__ = "triton"
    setattr(top, "tiles", tiles)  # noqa: B010  (how a user tells, from the module, that the alias is in use)

    def getattr_(name: str) -> Any:  # ``triton.language`` etc. without importing it first
        full = f"triton.{name}"
        if full in TRITON_MODULES:
            return importlib.import_module(full)
        raise AttributeError(f"module 'triton' (tiles' compatibility mode) has no attribute {name!r}")

    setattr(top, "__getattr__", getattr_)  # noqa: B010
    return top


class _Metadata(importlib.metadata.Distribution):
    """``importlib.metadata.version("triton")``: the Triton version tiles implements."""

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: triton\nVersion: {TRITON_VERSION}\n"
        return None

    def locate_file(self, path: Any) -> Any:
        return path


class TritonFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``triton`` and ``triton.<module>`` (``TRITON_MODULES``) while installed."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "triton" or fullname in TRITON_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if fullname.startswith("triton."):
            # not found, rather than found by the path finder in a tiles package's folder (a
            # second copy of a tiles module) or in a real Triton's
            raise ModuleNotFoundError(f"No module named {fullname!r} (tiles' Triton compatibility mode "
                                      "serves the modules kernels and host code use: tiles/as_triton/modules.py)",
                                      name=fullname)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return types.ModuleType(spec.name)  # a placeholder: exec_module puts the real one in its place

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        # the import system returns what sys.modules holds after this, so tiles' module keeps
        # its own name and spec
        sys.modules[name] = _top_level() if name == "triton" else importlib.import_module(TRITON_MODULES[name])

    def find_distributions(self, context: Any = None) -> Iterator[importlib.metadata.Distribution]:
        if getattr(context, "name", None) in (None, "triton"):
            yield _Metadata()


_FINDER = TritonFinder()


def alias(name: str) -> None:
    """Put ``name`` (``triton`` or a Triton module name) in ``sys.modules`` now."""
    if name not in sys.modules:
        sys.modules[name] = _top_level() if name == "triton" else importlib.import_module(TRITON_MODULES[name])


# a real Triton's modules that were imported before ``install``: put back by ``uninstall``
_shadowed: dict[str, types.ModuleType] = {}


def _ours(name: str, module: object) -> bool:
    if name == "triton":
        return getattr(module, "tiles", None) is not None
    return str(getattr(module, "__name__", "")).startswith("tiles")


def install() -> None:
    """Serve ``triton`` from tiles in this process (idempotent).  A real Triton imported before
    stays with the modules that imported it; later imports get tiles."""
    if not installed():
        _rules_change()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        if not _ours(name, sys.modules[name]):
            _shadowed[name] = sys.modules.pop(name)
    alias("triton")
    # the modules tiles has loaded already are aliased now: importing ``triton.runtime.driver``
    # later must not make the import system set the parent's attribute (``runtime.driver``, the
    # driver object) to the module
    for name, target in TRITON_MODULES.items():
        if target in sys.modules:
            alias(name)


def uninstall() -> None:
    """Forget the alias: ``sys.modules`` loses every ``triton`` entry that is tiles'."""
    if installed():
        _rules_change()
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        if _ours(name, sys.modules[name]):
            del sys.modules[name]
    sys.modules.update(_shadowed)
    _shadowed.clear()


def _rules_change() -> None:
    """Kernels traced under tiles' rules must trace again under Triton's, and back."""
    from ..runtime.jit import forget_compiled_kernels
    forget_compiled_kernels()


def installed() -> bool:
    """Whether ``import triton`` gives tiles in this process."""
    return config.triton_rules()
