"""``tl.dot`` as Hopper warpgroup MMAs (``wgmma``), operands read from swizzled local memory.

Every warpgroup (4 warps) owns 64-row blocks of the output in the interleaved MMA layout
(``plan.wgmma_layout``): fragment rep ``mi`` of warp ``w`` holds rows
``mi * 16 * warps_m + 16 * w``, which is where ``wgmma.m64nNk16`` puts warp ``w``'s rows
of the block starting at ``mi * 16 * warps_m + 64 * (w // 4)``.  A is stored M x K
(K-major), B either K x N (N-major, read transposed; 16-bit types only) or N x K rows
(K-major): x's rows when the DOT absorbed ``trans(x)``, else B written transposed (tf32 and
8-bit operands, which wgmma reads K-major only); see ``lowering/mma/smem.py``.  A operand already in
registers (hoisted or repacked from a previous product) is passed as registers.

Outside pipelined loops the DOT stages its operands, fences them for the async proxy,
synchronizes, issues all MMAs as one group and waits for it; inside a pipelined loop
(``lowering/mma/pipeline.py``) the operands are already in the stage buffer and the last group may
stay in flight (``keep``).
"""

from __future__ import annotations

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Instr
from ....core.ops import Op
from ...lowering.emitter import Handle
from ...lowering.lower import Index
from ...lowering.mma.base import TensorCoreLowering
from ...lowering.mma.plan import WARP, MMALayout, Plan
from ...lowering.mma.smem import descriptor, operands
from . import inflight

MAX_N = 256  # widest wgmma


def _smem_base(lw: TensorCoreLowering) -> Handle:
    return lw.cached(("wgmma-smem-base", lw.e.local_base), lambda: lw.e.shared_address(0))


def _warp_coordinates(lw: TensorCoreLowering, lay: MMALayout) -> tuple[Index, Index]:
    """This warp's (warp_m, warp_n) in ``lay`` (as ``Lanes``), computed from a warp index the
    assembler knows is warp-uniform: the descriptors built from them then live in uniform
    registers instead of being moved there before every ``wgmma``."""
    iop = lw.iop
    warp: Index = lw.e.warp_index()
    nw = lay.warps_m * lay.warps_n
    if lw.threads // WARP > nw:
        warp = iop(Op.MOD, warp, nw)
    return iop(Op.MOD, warp, lay.warps_m), iop(Op.IDIV, warp, lay.warps_m)


def wgmma_dot(lw: TensorCoreLowering, dot: Instr, lay: MMALayout, c: list[Handle], plan: Plan,
              afr: list[list[list[Handle]]] | None, staged: dict[int, Handle] | None, keep: int) -> list[Handle]:
    """d = a @ b + c; ``staged``: byte bases of operands a pipelined stage already holds
    (operand 0/1; None: stage both here); ``afr``: A fragments in registers [batch][k step][mi]."""
    e, iop = lw.e, lw.iop
    a, b, _ = dot.operands
    adt: DType = a.type.element  # type: ignore[assignment]
    k = a.type.shape[-1]
    ops = operands(plan, dot)
    smem = _smem_base(lw)
    if staged is None:
        lw.reserve_local(ops.nbytes)
        if afr is None:
            ops.a.store(lw, lw.env[a], lw.layout(a), adt, 0)
        b_src = plan.b_rows.get(dot, b)
        transpose = ops.b_k_major and dot not in plan.b_rows  # K x N written as N x K rows
        ops.b.store(lw, lw.env[b_src], lw.layout(b_src), adt, ops.b_offset, transpose)
        e.fence_async_shared()
        e.barrier()
        a_base, b_base = smem, e.binary(Op.ADD, smem, lw.const(ops.b_offset, D.int32), D.int32)
    else:
        assert 1 in staged and (afr is not None or 0 in staged)
        a_base = e.binary(Op.ADD, smem, staged[0], D.int32) if 0 in staged else smem
        b_base = e.binary(Op.ADD, smem, staged[1], D.int32)
    warp_m, warp_n = _warp_coordinates(lw, lay)
    n_warp = lay.reps_n * 8
    wg_rows = iop(Op.MUL, iop(Op.IDIV, warp_m, 4), 64 * ops.a.width)
    if ops.b_k_major:
        wg_cols = iop(Op.MUL, warp_n, n_warp * ops.b.width)
    else:
        wg_cols = iop(Op.MUL, warp_n, n_warp * adt.itemsize // ops.b.width * ops.b.block_bytes)
    a_desc = None if afr is not None else descriptor(lw, e.binary(Op.ADD, a_base, lw.idx(wg_rows), D.int32),
                                                     ops.a.fields())
    b_desc = descriptor(lw, e.binary(Op.ADD, b_base, lw.idx(wg_cols), D.int32), ops.b.fields())

    def shifted(desc: Handle, offset: int) -> Handle:
        return desc if offset == 0 else e.binary(Op.ADD, desc, lw.const(offset >> 4, D.uint64), D.uint64)

    d = list(c)
    kstep = 32 // adt.itemsize  # one instruction reads 32 bytes of K
    e.wgmma_fence()
    for kk in range(k // kstep):
        for mi in range(lay.reps_m):
            a_in = afr[0][kk][mi] if afr is not None else shifted(a_desc, ops.a.logical(mi * lay.rep_rows,
                                                                                          kk * kstep))
            for n0 in range(0, n_warp, MAX_N):
                width = min(MAX_N, n_warp - n0)
                if ops.b_k_major:
                    b_in = shifted(b_desc, ops.b.logical(n0, kk * kstep))
                else:
                    b_in = shifted(b_desc, ops.b.logical(kk * kstep, n0))
                slots = [lay.slot(0, mi, ni, cc) for ni in range(n0 // 8, (n0 + width) // 8) for cc in range(4)]
                out = e.wgmma(width, kstep, a_in, b_in, [d[i] for i in slots], adt, False, not ops.b_k_major)
                for i, h in zip(slots, out):
                    d[i] = h
    e.wgmma_commit()
    d = inflight.wait(lw, keep, d)
    if staged is None:
        e.barrier()
    return d
