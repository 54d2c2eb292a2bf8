"""Triton's ``triton.compiler`` names that user code imports (its errors, ``CompiledKernel``)."""

from ..backends.base import CompiledKernel
from ..version import __version__
from .errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct


def triton_key() -> str:
    """Triton's key for "this compiler": here tiles' name and version (torch's caches read it)."""
    return f"tiles-{__version__}"


__all__ = ["CompilationError", "CompileTimeAssertionFailure", "CompiledKernel", "UnsupportedLanguageConstruct",
           "triton_key"]
