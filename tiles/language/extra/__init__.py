"""``tl.extra``: vendor libraries.  ``libdevice`` (and its ``cuda`` / ``hip`` spellings) are one
portable set of math functions that every backend runs."""

from . import cuda, hip, libdevice  # noqa: F401
