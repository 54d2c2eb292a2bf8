"""The IR passes that run just before the GPU walk (``lower.lower``), in order.

Each is semantics-preserving and exists for layouts: the walk and the tensor-core planner give
every value one layout, so forms that make one value serve two masters are split first.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from ...core import dtypes as D  # noqa: N812
from ...core.descriptors import desugar_descriptors
from ...core.fold import common_subexpressions
from ...core.ir import Block, Instr, Kernel, Value
from ...core.ops import Op
from .carried_index import carry_index_scalars
from .contract import contract_multiply_adds
from .emitter import Emitter
from .induction import close_induction_pointers
from .mma.emitter import TensorCoreEmitter
from .reassociate_pointers import reassociate_pointer_sums
from .transpose_loads import transpose_column_loads


def split_tile_constants(kernel: Kernel) -> Kernel:
    """Every use of a constant tile after the first gets its own ``const`` next to the user, so
    a zero that CSE shared between a dot accumulator (MMA layout) and a ``tl.where`` (blocked
    layout) no longer forces a conversion through local memory."""
    defs = {r: i for i in kernel.walk() if i.op is Op.CONST and i.results[0].type.shape for r in i.results}
    seen: set[Value] = set()

    def visit(block: Block) -> None:
        out: list[Instr] = []
        for instr in block.instrs:
            for region in instr.regions:
                visit(region)
            operands = list(instr.operands)
            for n, v in enumerate(operands):
                const = defs.get(v)
                if const is None:
                    continue
                if v not in seen:
                    seen.add(v)
                    continue
                copy_ = Value(v.type)
                out.append(dataclasses.replace(const, results=(copy_,)))
                operands[n] = copy_
            if operands != list(instr.operands):
                instr = dataclasses.replace(instr, operands=tuple(operands))
            out.append(instr)
        block.instrs = out

    visit(kernel.body)
    return kernel


def prepare(kernel: Kernel, emitter: Emitter, fp_fusion: bool = False,
            claim: Callable[[Kernel, Emitter], Callable[[Instr], bool]] | None = None,
            reassociate: bool = False) -> Kernel:
    """A copy of ``kernel`` ready for the walk on ``emitter``: first, descriptor accesses become
    masked loads and stores (core/descriptors.py) except those ``claim(copy, emitter)`` keeps
    (CUDA: TMA, cuda/hopper/tma.py, which may add a hidden parameter to the copy); with ``fp_fusion``
    products fused into the sums they feed (contract.py); with ``reassociate`` (tensor-core emitters)
    pointer sums inside loops reassociated (reassociate_pointers.py); last, legalize.py spells out the cases
    the emitter does not (division by 0 or -1, out-of-range shifts, int1 arithmetic)."""
    kernel = copy.deepcopy(kernel)
    keep = claim(kernel, emitter) if claim is not None else (lambda instr: False)
    if desugar_descriptors(kernel, keep):
        kernel = common_subexpressions(kernel)
    kernel = close_induction_pointers(kernel)
    kernel = carry_index_scalars(kernel)
    if fp_fusion:
        kernel = contract_multiply_adds(kernel)
    if isinstance(emitter, TensorCoreEmitter):  # GPUs read along addresses; tensor cores stage B as rows
        kernel = transpose_column_loads(kernel, emitter.mma_shape(D.float16, D.float32, "ieee") is not None)
        if reassociate:  # CodegenChoices.reassociate; LLVM's pointer arithmetic wraps
            kernel = reassociate_pointer_sums(kernel)
    from .legalize import legalize
    return legalize(split_tile_constants(kernel), emitter.legality)
