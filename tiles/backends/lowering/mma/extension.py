"""The extension point of the MMA lowering: what a target adds to it, handed in by its backend.

The generic MMA lowering (this package) plans MMA layouts, stages operands, loads fragments,
runs ``mma``-style warp MMAs, pipelines loops with the emitter's asynchronous copies
(``cp_async``) and stores MMA tiles.  A target with more (CUDA's Hopper parts,
``backends/cuda/hopper/``: ``wgmma``, TMA, a producer warpgroup, persistent programs, products
left in flight) passes one ``MMAExtension`` to ``entry.lower_with_tensor_cores``; the lowering
keeps it as ``TensorCoreLowering.ext`` and calls it at the points below, and never imports a
backend.  ``NO_EXTENSION`` (every hook absent) is the lowering of a target with warp MMAs only.

The hooks take the ``TensorCoreLowering`` (typed ``Any`` here: this module sits below it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....core.ir import Block, Instr, Kernel, Value
from ....core.ops import Op
from ...base import Options
from ..emitter import Emitter, Handle

# (lowering, instr) -> one handle list per result
Rule = Callable[[Any, Instr], list[Any]]
# (kernel, emitter, threads, options) -> which descriptor accesses the walk lowers itself (``prepare``)
Claim = Callable[[Kernel, Emitter, int, Options], Callable[[Instr], bool]]


class ChoiceNotApplicableError(Exception):
    """Raised by a hook when a code choice of ``Options.codegen`` does not serve this kernel
    (before anything is emitted): ``lower_with_tensor_cores`` returns ``NotApplicable(choice,
    why)`` and the backend lowers again with it off."""

    choice = ""  # a field of ``CodegenChoices`` (set by subclasses)

    @property
    def why(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Warpgroup:
    """How the target runs the plan's warpgroup MMAs (``plan.wgmma``: the emitter's ``wgmma_ok``)."""

    # (lowering, dot, layout, accumulator handles, plan, A fragments in registers or None,
    #  staged operand bases or None, groups left in flight) -> the product's handles
    dot: Callable[..., list[Handle]]
    # (lowering, the loop's DOTs, its body, stages) -> (the product left in flight into the next
    # iteration, the carried accumulator it feeds), or None
    kept_last: Callable[[Any, list[Instr], Block, int], tuple[Instr, Value] | None]
    kept_variant: str  # ``Lowered.variants``' name for a product so kept (a field of ``CodegenChoices``)


@dataclass(frozen=True)
class MMAExtension:
    """A target's additions to the MMA lowering; each hook is optional."""

    # descriptor accesses the walk keeps (``prepare``; the rest become masked loads and stores)
    claim: Claim | None = None
    # rules for ops the generic MMA rules leave to the shared ones (TMA's DESC_LOAD, DESC_STORE)
    rules: Mapping[Op, Rule] = field(default_factory=dict)
    # after the plan and the epilogue's stores are settled, before the walk (a producer warpgroup,
    # persistent programs); may raise ``ChoiceNotApplicableError``
    setup: Callable[[Any], None] | None = None
    # the copy engine a loop carrying MMA fragments tries first: its results when it pipelines the
    # loop itself (TMA), None to leave it to ``cp_async`` (``pipeline.py``) or a plain loop
    pipelined_loop: Callable[[Any, Instr], list[Any] | None] | None = None
    warpgroup: Warpgroup | None = None
    # what the launch must pass besides the arguments, as JSON (``Lowered.tensor_maps``)
    tensor_maps: Callable[[Any], Sequence[dict[str, Any]]] | None = None


NO_EXTENSION = MMAExtension()
