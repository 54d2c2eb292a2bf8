"""The shared GPU lowering: tile IR -> per-thread code through an ``Emitter``
(see docs/lowering.md)."""

from .emitter import Emitter, Handle
from .entry import Lowered, NotApplicable, lower
from .layout import Layout, choose_layout
from .lower import Lowering

__all__ = ["Emitter", "Handle", "Layout", "Lowered", "Lowering", "NotApplicable", "choose_layout", "lower"]
