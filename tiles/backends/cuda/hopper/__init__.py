"""CUDA's Hopper (sm_90/sm_90a) parts of the tensor-core lowering, added to the generic MMA
lowering (``backends/lowering/mma/``) through its extension point: ``extension.HOPPER``, which
``cuda/choices.py`` hands to ``lowering.entry.lower_with_tensor_cores``.

- ``wgmma.py``: a DOT as warpgroup MMAs, operands read through matrix descriptors;
- ``inflight.py``: a loop's last product left in flight into the next iteration;
- ``tma_claim.py`` (which descriptor accesses TMA takes, and the TMA emitter contract),
  ``tma_rebase.py``, ``tma_spec.py`` (the maps the host encodes), ``tma.py`` (single copies),
  ``tma_pipeline.py`` (TMA as the copy engine of a pipelined loop);
- ``tma_producer.py``: a producer warpgroup that issues those copies;
- ``persistent.py``: at most one program per SM, each running several of the kernel's.

and the instructions they need, as mixins of the CUDA emitter (``cuda/emitter.py``):
``wgmma_ops.py`` (``wgmma``, its fences and waits), ``tma_ops.py`` (bulk tensor copies,
mbarriers, named barriers, ``setmaxnreg``), ``stmatrix_ops.py``.
"""
