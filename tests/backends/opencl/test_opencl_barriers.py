"""Reductions under run-time conditionals (a ``tl.static_range`` body guarded by ``if i < n:``):
their barriers are emitted outside the ``if`` blocks (cstyle/guards.py: pocl's compile time
explodes with barriers under conditionals), and the results match the interpreter's."""

from __future__ import annotations

import re

import numpy as np
import opencl_kernels as K
import pytest

from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

BARRIER = "barrier(CLK_LOCAL_MEM_FENCE);"


def barriers(source: str) -> tuple[int, int]:
    """(all barriers, those inside an ``if`` block) in the kernel function of ``source``."""
    body = source[source.index("__kernel"):]
    blocks: list[str] = []
    total = guarded = 0
    for line in body.splitlines():
        text = line.strip()
        if text == BARRIER:
            total += 1
            guarded += "if" in blocks
        elif text.startswith("}") and not text.endswith("{"):
            blocks.pop()
        elif text.endswith("{"):
            if text.startswith("} else"):
                blocks.pop()
            blocks.append("if" if re.match(r"(\} else )?if \(|\} else \{", text) else "other")
    return total, guarded


def source(max_blocks: int, loop: bool) -> str:
    x = np.zeros(1, np.float32)
    compiled = K.guarded_reductions_kernel.warmup(x, x, x, 3, 37, MAX_BLOCKS=max_blocks, BLOCK_D=64,
                                                  LOOP=loop, grid=(1,), backend="opencl")
    return compiled.asm["opencl"]


def test_no_barrier_inside_an_if():
    total, guarded = barriers(source(8, loop=False))
    assert total > 8 * 4 and guarded == 0


def test_barrier_count_of_a_reduction():
    """On a CPU device a reduction tree combines 3 levels between barriers: 256 partials (a
    1024-element tile on 256 work-items) in 4 barriers, not 10."""
    from tiles.backends.opencl import runtime
    x = np.zeros(256, np.float32)
    compiled = K.full_reduce_kernel.warmup(x, x, 256, BLOCK=1024, grid=(1,), backend="opencl")
    total, _ = barriers(compiled.asm["opencl"])
    assert total <= 3 * (4 if runtime.is_cpu() else 10)


def test_barrier_parser():
    code = "__kernel void k() {\n  if (a) {\n  barrier(CLK_LOCAL_MEM_FENCE);\n  } else {\n" \
           "    if (b) { x = 1; }\n  }\n  for (;;) {\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n}\n"
    assert barriers(code) == (2, 1)


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("n_blocks,D", [(0, 37), (2, 64), (3, 53), (4, 1)])
def test_guarded_reductions_match_the_interpreter(rng, n_blocks, D, loop):
    rows, max_blocks = 3, 4
    x = (rng.standard_normal((rows, max_blocks, D)) * rng.uniform(0.5, 4, (rows, max_blocks, 1))).astype(np.float32)
    results = []
    for backend in ("interpreter", "opencl"):
        out, stats = np.zeros_like(x), np.zeros((rows, max_blocks + 3), np.float32)
        K.guarded_reductions_kernel[(rows,)](x, out, stats, n_blocks, D, MAX_BLOCKS=max_blocks, BLOCK_D=64,
                                             LOOP=loop, backend=backend)
        results.append((out, stats))
    (out, stats), (ocl_out, ocl_stats) = results
    np.testing.assert_allclose(ocl_out, out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ocl_stats, stats, rtol=1e-5, atol=1e-5)
    if n_blocks:
        assert stats[:, max_blocks] == pytest.approx(x[:, :n_blocks, :].max((1, 2)))  # the blocks' largest
