"""``from triton.language.extra import libdevice``: the libdevice math functions, on every backend.

The names are those of ``tiles.language.math.LIBDEVICE`` (the table in ``core/mathfns.py``);
a libdevice name tiles does not provide raises a CompilationError naming the line and why.
"""

from ..math import LIBDEVICE

globals().update(LIBDEVICE)
__all__ = sorted(LIBDEVICE)
