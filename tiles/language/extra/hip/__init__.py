"""``tl.extra.hip``: the same portable libdevice functions under Triton's hip spelling."""

from . import libdevice  # noqa: F401
