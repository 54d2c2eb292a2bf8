"""Triton's ``triton.compiler.errors`` names, bound to the tiles errors that mean the same."""

from __future__ import annotations

from ..core.errors import CompilationError, UnsupportedError

UnsupportedLanguageConstruct = UnsupportedError


class CompileTimeAssertionFailure(CompilationError):  # noqa: N818  (Triton's name)
    """A ``tl.static_assert`` that is false for this specialization."""


__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
