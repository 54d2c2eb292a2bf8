"""tl.dot on tensor cores (MMA layout planning, operand staging, fragment loads, ops on fragments).

A backend with tensor cores lowers through ``entry.lower_with_tensor_cores``: the shared walk with
``TensorCoreLowering``, whose rules (``TC_RULES``) take DOT, FOR, LOAD and the ops on
fragments first and fall back to the shared ones.
"""

from __future__ import annotations

from . import epilogue, fragments, pipeline, rules  # noqa: F401  (register the tensor-core rules)
from .base import TensorCoreLowering
from .emitter import TensorCoreEmitter

__all__ = ["TensorCoreEmitter", "TensorCoreLowering"]

