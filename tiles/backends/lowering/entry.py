"""The entry point of the shared lowering: a kernel and an ``Emitter`` in, a typed ``Lowered`` out.

The rule modules register themselves in ``lower.RULES`` when imported; the order below is
the order of registration, and later modules may take an op over from earlier ones, so it is
written once, here.  Tensor cores are a second dispatch on top (``mma/``, a ``walker`` whose
own rule table goes first), not a rewrite of this one; what a target adds to them comes in as
an ``MMAExtension`` (``mma/extension.py``; CUDA's Hopper parts: ``backends/cuda/hopper/``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.ir import Kernel
from ..base import Options
from . import memory, reductions, relayout, sorting  # noqa: F401  (register their rules)
from .emitter import Emitter
from .lower import Lowering
from .mma import TensorCoreEmitter, TensorCoreLowering, epilogue
from .mma.extension import NO_EXTENSION, ChoiceNotApplicableError, Claim, MMAExtension
from .prepare import prepare


@dataclass(frozen=True)
class Lowered:
    """One kernel's code and the launch facts the lowering fixed."""

    code: str            # what ``Emitter.finish`` returned: OpenCL C, LLVM IR text, ...
    entry: str           # the kernel's function name in ``code``
    threads: int         # threads per program (``Options.threads``)
    shared_bytes: int    # work-group local / dynamic shared memory per program
    not_applied: tuple[str, ...] = ()  # options the code does not follow, each with its file:line
    tensor_maps: tuple[dict[str, Any], ...] = ()  # maps the launch passes (MMAExtension.tensor_maps: CUDA's TMA)
    variants: frozenset[str] = frozenset()  # optional code shapes it took (CodegenChoices fields: "inflight"...)


@dataclass(frozen=True)
class NotApplicable:
    """A code choice of ``Options.codegen`` that does not serve this kernel: lower it again with
    ``choice`` off (the backend's search, e.g. ``cuda/choices.py``)."""

    choice: str  # a field of ``CodegenChoices``
    why: str


Walker = Callable[[Kernel, Any, int, Options], Lowering]  # (kernel, emitter, threads, options)


def lower(kernel: Kernel, emitter: Emitter, options: Options, walker: Walker = Lowering,
          claim: Claim | None = None,
          tensor_maps: Callable[[Any], Sequence[dict[str, Any]]] | None = None) -> Lowered:
    """Lower ``kernel`` onto ``emitter`` with ``options.threads(emitter.target)`` threads per program;
    ``walker`` makes the ``Lowering`` (``mma.TensorCoreLowering`` adds the tensor-core rules);
    ``claim`` picks the descriptor accesses the walk lowers itself (``prepare``); ``tensor_maps``
    reads the maps the launch must pass off the finished walk."""
    threads = options.threads(emitter.target)
    prepared = prepare(kernel, emitter, options.fp_fusion,
                       None if claim is None else lambda k, e: claim(k, e, threads, options),
                       options.codegen.reassociate)
    lowering = walker(prepared, emitter, threads, options)
    code = lowering.run()
    maps = () if tensor_maps is None else tuple(tensor_maps(lowering))
    return Lowered(code, emitter.name or kernel.name, lowering.launch_threads, lowering.local_bytes,
                   tuple(lowering.not_applied), maps, frozenset(lowering.variants))


def lower_with_tensor_cores(kernel: Kernel, emitter: TensorCoreEmitter, options: Options,
                            extension: MMAExtension = NO_EXTENSION) -> Lowered | NotApplicable:
    """``lower`` with the tensor-core rules (``TC_RULES``) going first, stores of MMA tiles
    through narrow pointers written from a coalescing layout (``mma/epilogue.py``), and what the
    target's ``extension`` adds (CUDA: ``cuda/hopper/extension.py``); or the code choice that
    turned out not to apply (a hook's ``ChoiceNotApplicableError``: the emitter's output is then void)."""
    def walker(k: Kernel, e: TensorCoreEmitter, threads: int, o: Options) -> TensorCoreLowering:
        lowering = TensorCoreLowering(k, e, threads, o, extension)
        lowering.tc.stores = epilogue.claim_stores(lowering)  # reads the plan the constructor made
        if extension.setup is not None:
            extension.setup(lowering)
        return lowering
    try:
        return lower(kernel, emitter, options, walker, extension.claim, extension.tensor_maps)
    except ChoiceNotApplicableError as e:
        return NotApplicable(e.choice, e.why)
