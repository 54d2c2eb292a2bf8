"""A loop's last wgmma group left in flight across iterations when the loop runs more than one
product (attention: ``qk = dot(q, k)`` then ``acc = dot(p, v, acc)``).

The accumulator product is waited for not at its own ``wgmma.wait_group`` but at the next
iteration's first product's ``wait_group 0`` (which completes every older group too), so the
warpgroup goes on to the next stage's copies and MMAs while it runs; the loop's exit waits for
it (``mma/pipeline.finish_carried``).  Until that wait the carried accumulator's registers belong
to the MMA: the waits tie them (``wgmma_wait`` takes them as in/out operands) and the fragment
handles are rebound to the tied ones, so nothing reads them earlier.  It applies only when no
use of the carried accumulator comes before the first product of the body, and in loops of
three stages or more: the next stage's copies then go out after the MMAs, and with two stages
they would have under one iteration to land (measured: the 2-stage 128x128 attention kernels
lost 5 %).  The registers it keeps live may cost a program per SM; the CUDA backend compiles
such a kernel both ways and keeps this one only where ptxas says it does not (``cuda/choices.py``),
lowering the other with ``Options.codegen.inflight`` off (``TILES_INFLIGHT=0`` turns it off everywhere).
"""

from __future__ import annotations

from ....core import dtypes as D  # noqa: N812
from ....core.ir import Block, Instr, Value
from ...lowering.emitter import Handle
from ...lowering.mma.base import TensorCoreLowering
from ...lowering.mma.pipeline import reads_value

VARIANT = "inflight"  # its name in ``Lowered.variants``


def kept_last(lw: TensorCoreLowering, dots: list[Instr], body: Block, stages: int) -> tuple[Instr, Value] | None:
    """(the product left in flight, the carried accumulator it feeds) when the body's last
    product is only yielded as a float32/int32 accumulator whose every use follows the body's
    first product, in a loop of ``stages`` >= 3; else None."""
    if stages < 3 or not lw.options.codegen.inflight:
        return None
    plan = lw.tc.plan
    order = [i for i in body.instrs if i in dots]
    if not plan.wgmma or len(dots) < 2 or len(order) != len(dots) or order[-1] in plan.fused_adds.values():
        return None
    last = order[-1]
    out = last.result
    if out.type.element not in (D.float32, D.int32) or any(reads_value(i, out) for i in body.instrs):
        return None
    pos = [i for i, y in enumerate(body.yields) if y is out]
    if len(pos) != 1:
        return None
    acc = body.args[1 + pos[0]]
    if acc in plan.blocked or any(y is acc for y in body.yields):
        return None
    first = body.instrs.index(order[0])
    if any(reads_value(i, acc) for i in body.instrs[:first + 1]):
        return None
    return last, acc


def wait(lw: TensorCoreLowering, pending: int, d: list[Handle]) -> list[Handle]:
    """``wgmma.wait_group pending`` for the product ``d``, tying (and rebinding) the fragments
    of older groups still in flight: every group but the newest ``pending`` ones is complete
    after it, and the caller's group is the newest."""
    st = lw.tc
    older = [(v, st.mma[v]) for v in st.wg_inflight]
    st.wg_inflight = []
    out = lw.e.wgmma_wait(pending, d + [h for _, hs in older for h in hs])
    at = len(d)
    for v, hs in older:
        st.mma[v] = out[at:at + len(hs)]
        at += len(hs)
    return out[:len(d)]
