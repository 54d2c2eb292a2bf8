"""The Hopper extension of the MMA lowering (``lowering/mma/extension.py``): which hook each part
of this package fills.  ``cuda/choices.py`` passes ``HOPPER`` to every tensor-core lowering; on
targets without ``wgmma`` or TMA (sm_80, sm_89) its hooks find nothing to take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core.ops import Op
from ...lowering.mma.base import TensorCoreLowering
from ...lowering.mma.extension import MMAExtension, Warpgroup
from . import inflight, persistent, tma, tma_claim, tma_pipeline, tma_producer, wgmma


def _setup(lw: TensorCoreLowering) -> None:
    """A producer warpgroup where the TMA pipelines allow one, then persistent programs over it;
    top-level descriptor loads taken for a producer that does not copy them all are refused
    (``persistent.TopLoadsUnusedError``: lowered again without)."""
    lw.tc.producer = tma_producer.find_producer(lw)
    if lw.tc.producer is not None:
        lw.launch_threads = lw.threads + lw.tc.producer.threads
        lw.tc.persistent = persistent.find_persistent(lw)
    persistent.check_top_loads(lw)


def _tensor_maps(lw: TensorCoreLowering) -> Sequence[dict[str, Any]]:
    return [spec.to_json() for spec in tma.recorded_maps(lw)]


HOPPER = MMAExtension(
    claim=tma_claim.claim,
    rules={Op.DESC_LOAD: tma.desc_load, Op.DESC_STORE: tma.desc_store},
    setup=_setup,
    pipelined_loop=tma_pipeline.pipelined_loop,
    warpgroup=Warpgroup(dot=wgmma.wgmma_dot, kept_last=inflight.kept_last, kept_variant=inflight.VARIANT),
    tensor_maps=_tensor_maps,
)
