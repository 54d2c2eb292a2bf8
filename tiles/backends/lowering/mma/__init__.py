"""tl.dot on tensor cores, for any target with warp MMAs: MMA layout planning (``plan.py``),
operand staging and fragment loads (``convert.py``, ``rules.py``), ops on fragments
(``fragments.py``, ``remat.py``), software pipelining with the emitter's asynchronous copies
(``pipeline.py``, ``running.py``, ``lookahead.py``), swizzled local-memory tiles (``smem.py``),
MMA tiles leaving fragments (``staging.py``, ``epilogue.py``).

A backend with tensor cores lowers through ``entry.lower_with_tensor_cores``: the shared walk with
``TensorCoreLowering``, whose rules (``TC_RULES``) take DOT, FOR, IF, LOAD, STORE and the ops on
fragments first and fall back to the shared ones.  What a target adds (warpgroup MMAs, another
copy engine, rules of its own) it passes in as an ``MMAExtension`` (``extension.py``); CUDA's
Hopper parts are ``backends/cuda/hopper/``.
"""

from __future__ import annotations

from . import epilogue, fragments, pipeline, rules  # noqa: F401  (register the tensor-core rules)
from .base import TensorCoreLowering
from .emitter import TensorCoreEmitter
from .extension import NO_EXTENSION, ChoiceNotApplicableError, MMAExtension, Warpgroup

__all__ = ["NO_EXTENSION", "ChoiceNotApplicableError", "MMAExtension", "TensorCoreEmitter", "TensorCoreLowering",
           "Warpgroup"]

