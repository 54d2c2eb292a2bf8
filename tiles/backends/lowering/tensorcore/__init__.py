"""tl.dot on tensor cores (MMA layout planning, operand staging, fragment loads, ops on fragments)."""

from . import fragments, rules  # noqa: F401  (register the DOT, FOR and fragment rules; fallbacks kept)
