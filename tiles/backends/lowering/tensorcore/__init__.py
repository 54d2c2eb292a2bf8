"""tl.dot on tensor cores (MMA layout planning, operand staging, fragment loads)."""

from . import rules  # noqa: F401  (registers the DOT and FOR rules; serial fallbacks kept)
