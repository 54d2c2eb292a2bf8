"""Triton's ``triton.compiler.errors`` names, bound to the tiles errors that mean the same."""

from __future__ import annotations

from ..core.errors import CompilationError, CompileTimeAssertionFailure, UnsupportedError

UnsupportedLanguageConstruct = UnsupportedError


__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
