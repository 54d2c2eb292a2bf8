"""The conformance suite's old name: the suite is ``tiles.conformance`` (it ships with tiles).

``python -m conformance`` and ``python -m conformance.coverage --write`` keep working (``__main__``
and ``coverage`` here forward to the suite), and ``import conformance.X`` gives the very module
``tiles.conformance.X`` (one module object under two names: the suite's registries are not doubled).
New code imports ``tiles.conformance``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

from tiles.conformance import *  # noqa: F403  (the suite's package names, if it ever has some)

_FORWARDERS = {f"{__name__}.__main__", f"{__name__}.coverage"}  # this folder's own modules


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``conformance.X`` as the module ``tiles.conformance.X`` (first on ``sys.meta_path``: the
    path finder would load a second copy of a submodule from the suite's folder)."""

    def __init__(self) -> None:
        self.specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(__name__ + ".") or fullname in _FORWARDERS:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module("tiles." + spec.name)
        self.specs[spec.name] = module.__spec__  # the import system sets the alias's __spec__: put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.specs.pop(module.__name__.removeprefix("tiles."))


if not any(type(finder).__name__ == "_Alias" for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
