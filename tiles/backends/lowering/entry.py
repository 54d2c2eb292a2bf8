"""The entry point of the shared lowering: a kernel and an ``Emitter`` in, a typed ``Lowered`` out.

The rule modules register themselves in ``lower.RULES`` when imported; the order below is
the order of registration, and later modules may take an op over from earlier ones, so it is
written once, here.  Tensor cores are a second dispatch on top (``tensorcore/``, a ``walker``
whose own rule table goes first), not a rewrite of this one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.ir import Instr, Kernel
from ..base import Options
from . import memory, reductions, relayout, sorting  # noqa: F401  (register their rules)
from .emitter import Emitter
from .lower import Lowering
from .prepare import prepare
from .tensorcore import TensorCoreEmitter, TensorCoreLowering, epilogue, persistent, tma, tma_claim, tma_producer
from .tensorcore.tma_pipeline import lower_tma_pipelined  # noqa: F401  (registers the FOR rule)


@dataclass(frozen=True)
class Lowered:
    """One kernel's code and the launch facts the lowering fixed."""

    code: str            # what ``Emitter.finish`` returned: OpenCL C, LLVM IR text, ...
    entry: str           # the kernel's function name in ``code``
    threads: int         # threads per program (``Options.threads``)
    shared_bytes: int    # work-group local / dynamic shared memory per program
    not_applied: tuple[str, ...] = ()  # options the code does not follow, each with its file:line
    tensor_maps: tuple[dict[str, Any], ...] = ()  # TMA maps the launch passes (tensorcore/tma_spec.py)
    variants: frozenset[str] = frozenset()  # optional code shapes it took (tensorcore/inflight.py's VARIANT)


@dataclass(frozen=True)
class NotApplicable:
    """A code choice of ``Options.codegen`` that does not serve this kernel: lower it again with
    ``choice`` off (the backend's search, e.g. ``cuda/choices.py``)."""

    choice: str  # a field of ``CodegenChoices``
    why: str


Walker = Callable[[Kernel, Any, int, Options], Lowering]  # (kernel, emitter, threads, options)


# (kernel, emitter, threads, options) -> kept?
Claim = Callable[[Kernel, Emitter, int, Options], Callable[[Instr], bool]]


def lower(kernel: Kernel, emitter: Emitter, options: Options, walker: Walker = Lowering,
          claim: Claim | None = None) -> Lowered:
    """Lower ``kernel`` onto ``emitter`` with ``options.threads(emitter.target)`` threads per program;
    ``walker`` makes the ``Lowering`` (``tensorcore.TensorCoreLowering`` adds the tensor-core rules);
    ``claim`` picks the descriptor accesses the walk lowers itself (``prepare``)."""
    threads = options.threads(emitter.target)
    prepared = prepare(kernel, emitter, options.fp_fusion,
                       None if claim is None else lambda k, e: claim(k, e, threads, options))
    lowering = walker(prepared, emitter, threads, options)
    code = lowering.run()
    maps = tuple(spec.to_json() for spec in tma.recorded_maps(lowering))
    return Lowered(code, emitter.name or kernel.name, lowering.launch_threads, lowering.local_bytes,
                   tuple(lowering.not_applied), maps, frozenset(lowering.variants))


def _tensor_core_walker(kernel: Kernel, emitter: TensorCoreEmitter, threads: int,
                        options: Options) -> TensorCoreLowering:
    lowering = TensorCoreLowering(kernel, emitter, threads, options)
    lowering.tc.stores = epilogue.claim_stores(lowering)  # reads the plan the constructor made
    lowering.tc.producer = tma_producer.find_producer(lowering)
    if lowering.tc.producer is not None:
        lowering.launch_threads = lowering.threads + lowering.tc.producer.threads
        lowering.tc.persistent = persistent.find_persistent(lowering)
    persistent.check_top_loads(lowering)
    return lowering


def lower_with_tensor_cores(kernel: Kernel, emitter: TensorCoreEmitter, options: Options) -> Lowered | NotApplicable:
    """``lower`` with the tensor-core rules (``TC_RULES``) going first, stores of MMA tiles
    through narrow pointers written from a coalescing layout (``tensorcore/epilogue.py``), and
    TMA copying the descriptor tiles it can (``tensorcore/tma.py``); or the code choice that
    turned out not to apply (``persistent.py``'s two cases: the emitter's output is then void)."""
    try:
        return lower(kernel, emitter, options, walker=_tensor_core_walker, claim=tma_claim.claim)
    except persistent.TopLoadsUnusedError as e:  # (nothing emitted yet)
        return NotApplicable("tma_top_loads", str(e) or "the producer does not copy every top-level load taken")
    except persistent.NoRoomError as e:
        return NotApplicable("persistent", str(e))
