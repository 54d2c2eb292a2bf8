"""``tl.extra.cuda``: the same portable libdevice functions under Triton's cuda spelling."""

from . import libdevice  # noqa: F401
