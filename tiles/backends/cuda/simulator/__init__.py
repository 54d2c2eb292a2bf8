"""A numpy SIMT simulator of the lowering's emitter contract, the CUDA emitter's tensor-core, TMA
and mbarrier calls included: how the tensor-core lowering (``lowering/mma/``, ``cuda/hopper/``)
runs numerically without a GPU, in CI and in the test suite.

- ``simt.py``: ``SimEmitter`` (one numpy value per thread; ``mma``, ``ldmatrix``, ``stmatrix``,
  ``cp.async`` and asynchronous ``wgmma`` as PTX specifies them) and ``run(kernel_ir, args, grid,
  threads)``, which lowers the kernel once per program onto it (``cuda/choices.applicable``);
- ``tma.py``: ``TMASimEmitter``, with tensor maps, bulk tensor copies, mbarriers, a producer
  warpgroup and persistent programs (``run(..., programs=n)``).

Tests import them from here (``tests/backends/cuda``); nothing else in the package does.
"""
