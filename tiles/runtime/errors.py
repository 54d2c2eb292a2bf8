"""Triton's ``triton.runtime.errors`` names, bound to the tiles errors that mean the same."""

from __future__ import annotations

from ..core.errors import CompilationError, KernelRuntimeError, OutOfResourcesError, TilesError
from .autotune import AutotuneError

TritonError = TilesError
OutOfResources = OutOfResourcesError  # a kernel needs more shared memory / registers than the target has
InterpreterError = KernelRuntimeError  # what a kernel raises while it runs on the interpreter
AutotunerError = AutotuneError


class PTXASError(CompilationError):
    """ptxas refused the PTX a kernel lowered to (CUDA)."""


__all__ = ["AutotunerError", "InterpreterError", "OutOfResources", "PTXASError", "TritonError"]
