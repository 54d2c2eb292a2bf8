"""The NumPy reference interpreter of the tile IR (``TILES_INTERPRET=1``).

``interpret(kernel, grid, args)`` runs a kernel on NumPy arrays; ``INTERP_RULES``
maps every non-control-flow op to its rule; the elementwise rules themselves live
next to the IR (``tiles.core.semantics``), shared with constant folding.
docs/interpreter.md describes the model.
"""

from __future__ import annotations

from ..core import semantics
from .executor import interpret
from .rules import INTERP_RULES

__all__ = ["INTERP_RULES", "interpret", "semantics"]
