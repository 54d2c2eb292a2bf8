"""tl.dot on tensor cores (MMA layout planning, operand staging, fragment loads, ops on fragments).

A backend with tensor cores lowers through ``lower_with_tensor_cores``: the shared walk with
``TensorCoreLowering``, whose rules (``TC_RULES``) take DOT, FOR, LOAD and the ops on
fragments first and fall back to the shared ones.
"""

from __future__ import annotations

from typing import Any

from ....core.ir import Kernel
from ..lower import lower
from . import fragments, pipeline, rules  # noqa: F401  (register the tensor-core rules)
from .base import TensorCoreLowering, TensorCoreOptions
from .emitter import TensorCoreEmitter

__all__ = ["TensorCoreEmitter", "TensorCoreLowering", "TensorCoreOptions", "lower_with_tensor_cores"]


def lower_with_tensor_cores(kernel: Kernel, emitter: TensorCoreEmitter, threads: int,
                            options: TensorCoreOptions) -> Any:
    """``lower.lower`` with the tensor-core rules; returns what ``emitter.finish`` returns."""
    return lower(kernel, emitter, threads, lambda k: TensorCoreLowering(k, emitter, threads, options))
