"""The host side: ``@jit``, autotuning, caches and Triton's ``triton.runtime`` names."""

from .autotune import Autotuner, Config, autotune
from .driver import driver
from .errors import InterpreterError, OutOfResources
from .heuristics import Heuristics, heuristics
from .jit import JITFunction, KernelInterface, MockTensor

__all__ = ["Autotuner", "Config", "Heuristics", "InterpreterError", "JITFunction", "KernelInterface",
           "MockTensor", "OutOfResources", "autotune", "driver", "heuristics"]
