"""Triton's ``triton.compiler`` names that user code imports (its errors)."""

from .errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct

__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
