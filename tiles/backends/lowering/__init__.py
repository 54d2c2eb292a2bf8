"""The shared GPU lowering: tile IR -> per-thread code through an ``Emitter``
(see docs/lowering.md)."""

from .emitter import Emitter, Handle
from .layout import Layout, choose_layout
from .lower import Lowering, lower

__all__ = ["Emitter", "Handle", "Layout", "Lowering", "choose_layout", "lower"]
