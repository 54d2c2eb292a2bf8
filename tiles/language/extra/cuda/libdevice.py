"""``triton.language.extra.cuda.libdevice``: the portable libdevice functions (see ..libdevice)."""

from ...math import LIBDEVICE

globals().update(LIBDEVICE)
__all__ = sorted(LIBDEVICE)
