"""Errors that point at the user's kernel source."""

from __future__ import annotations

from .ir import UNKNOWN_LOC, Loc


class TilesError(Exception):
    """Base of every error tiles raises on purpose."""


class CompilationError(TilesError):
    """A kernel could not be traced or lowered; names the kernel's file:line.

    When the language itself refused an operation (a bad axis, mismatched types), ``__cause__`` is
    that error with the bare message (a ``ValueError`` or ``TypeError``), as in Triton, where
    ``str(exc.__cause__)`` is what tests and tools match."""

    def __init__(self, message: str, loc: Loc = UNKNOWN_LOC, cause: BaseException | None = None) -> None:
        self.message = message
        self.loc = loc
        if cause is not None:
            self.__cause__ = cause
        text = message
        if loc.line:
            text = f"{loc}: {message}"
            if loc.source:
                text += f"\n    {loc.source}"
        TilesError.__init__(self, text)


class CompileTimeAssertionFailure(CompilationError):  # noqa: N818  (Triton's name)
    """A ``tl.static_assert`` that is false for this specialization (no ``__cause__``: the assert is the error)."""


class UnsupportedError(CompilationError):
    """A backend cannot lower an op or dtype the kernel uses."""


class OutOfResourcesError(CompilationError):
    """The compiled kernel needs more of a per-program resource (shared memory) than the device has."""


class KernelRuntimeError(TilesError):
    """A kernel misbehaved while running (out-of-bounds access, failed device_assert)."""

    def __init__(self, message: str, loc: Loc = UNKNOWN_LOC) -> None:
        self.message = message
        self.loc = loc
        text = message if not loc.line else f"{loc}: {message}"
        if loc.source:
            text += f"\n    {loc.source}"
        TilesError.__init__(self, text)


class TritonRuleError(CompilationError, KernelRuntimeError):
    """A rule Triton enforces and tiles relaxes, enforced because the program runs in the Triton
    compatibility mode.  Both error kinds, as Triton raises a ``CompilationError`` when it compiles
    and an ``InterpreterError`` when it interprets; ``__cause__`` is the bare ``ValueError``."""


class LaunchError(TilesError):
    """The arguments or grid of a launch are wrong."""


class ArgumentOverflowError(LaunchError, OverflowError):
    """An integer argument does not fit in 64 bits (an ``OverflowError`` too, as Triton raises)."""
