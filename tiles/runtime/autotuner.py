"""Triton's module name ``triton.runtime.autotuner`` for what tiles keeps in ``autotune``/``heuristics``."""

from ..core.errors import OutOfResourcesError as OutOfResources
from .autotune import AutotuneError, Autotuner, Config, autotune
from .heuristics import Heuristics, heuristics

__all__ = ["AutotuneError", "Autotuner", "Config", "Heuristics", "OutOfResources", "autotune", "heuristics"]
