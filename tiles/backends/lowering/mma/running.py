"""Pipelined copies whose addresses advance by one fixed stride per iteration.

A pipelined feed's pointer tile is usually ``base + (trip count) * step`` (what ``induction.py``
makes of ``a_ptrs += BLOCK_K * stride``) or ``base + k``.  Recomputed every iteration, each of
a thread's chunk addresses is ``base_j + offset(iv) * size``, which the assembler turns into one
wide multiply-add per copy (``IMAD.WIDE``); in the main loop of a wgmma GEMM those measured 8 %
slower on the H200 than adding a 64-bit running offset (two plain adds per copy), which is also
what Triton's fastest form of the same loop does.  So when a feed's pointer is affine in the
induction variable with the same stride for every element (``affine_feeds``), the loop carries
one 64-bit byte offset per such feed, starting at 0 and advanced by the stride through
``TensorCoreEmitter.running_add`` (which the optimizer does not fold back into a product); the
copy of element ``j`` reads ``base_j + offset`` with ``base_j`` the pointer of the first
iteration the loop copies.
"""

from __future__ import annotations

from ....core.fold import PURE
from ....core.ir import Instr, Value, walk_block
from ....core.ops import Op


def _same_everywhere(v: Value, defs: dict[Value, Instr]) -> bool:
    """Whether the loop-invariant ``v`` holds one value in every element (a scalar, a constant,
    which is always a splat, or a broadcast or cast of such)."""
    instr = defs.get(v)
    if not v.type.shape or (instr is not None and instr.op is Op.CONST):
        return True
    return instr is not None and instr.op in (Op.CAST, Op.HINT, Op.BROADCAST) and \
        _same_everywhere(instr.operands[0], defs)


def stride_kind(v: Value, iv: Value, count: set[Value], defs: dict[Value, Instr], inside: set[Value],
                memo: dict[Value, str | None]) -> str | None:
    """How ``v`` changes from one iteration to the next: ``"none"`` (loop-invariant),
    ``"uniform"`` (by the same amount in every element), ``"varying"`` (by an amount that
    differs between elements but not between iterations) or None (not affine in the
    iteration).  ``count`` holds the values known to be exactly the trip count."""
    if v not in memo:
        if v is iv or v in count:
            memo[v] = "uniform"
        elif v not in inside:
            memo[v] = "none"
        else:
            instr = defs.get(v)
            memo[v] = None if instr is None else _rule(instr, iv, count, defs, inside, memo)
    return memo[v]


def _rule(instr: Instr, iv: Value, count: set[Value], defs: dict[Value, Instr], inside: set[Value],
          memo: dict[Value, str | None]) -> str | None:
    op = instr.op
    kinds = [stride_kind(o, iv, count, defs, inside, memo) for o in instr.operands]
    if None in kinds:
        return None
    if all(k == "none" for k in kinds):
        return "none" if op in PURE and not instr.regions else None
    if op in (Op.BROADCAST, Op.HINT, Op.RESHAPE):
        return kinds[0]
    if op is Op.CAST:
        dst, src = instr.results[0].type.dtype, instr.operands[0].type.dtype
        widening = getattr(dst, "is_int", False) and getattr(src, "is_int", False) and dst.bits >= src.bits
        return kinds[0] if widening else None
    if op in (Op.ADD, Op.SUB, Op.ADDPTR):
        return "uniform" if all(k in ("none", "uniform") for k in kinds) else "varying"
    if op is Op.MUL and kinds.count("none") == 1:
        moving, factor = (0, 1) if kinds[1] == "none" else (1, 0)
        uniform = kinds[moving] == "uniform" and _same_everywhere(instr.operands[factor], defs)
        return "uniform" if uniform else "varying"
    return None


def trip_counts(body_instrs: list[Instr], iv: Value, lb: Value, step: Value, defs: dict[Value, Instr]) -> set[Value]:
    """The body's values that are exactly the trip count: ``(iv - lb) // step`` (and
    ``iv // step`` when ``lb`` is the constant 0), as ``induction.py`` writes it."""
    out: set[Value] = set()
    lb_def = defs.get(lb)
    lb_zero = lb_def is not None and lb_def.op is Op.CONST and lb_def.attrs.value == 0
    from_lb = {i.results[0] for i in body_instrs if i.op is Op.SUB and i.operands == (iv, lb)}
    for i in body_instrs:
        if i.op is Op.IDIV and i.operands[1] is step and (i.operands[0] in from_lb or
                                                          (lb_zero and i.operands[0] is iv)):
            out.add(i.results[0])
    return out


def running_feeds(feeds: list[Instr], loop: Instr, defs: dict[Value, Instr]) -> list[int]:
    """Indices of the ``feeds`` (pipelined LOADs of ``loop``'s body) whose pointer advances by
    the same number of bytes in every element from one iteration to the next."""
    body = loop.regions[0]
    instrs = list(walk_block(body))
    inside = set(body.args) | {r for i in instrs for r in i.results}
    every = {**defs, **{r: i for i in instrs for r in i.results}}
    iv = body.args[0]
    count = trip_counts(instrs, iv, loop.operands[0], loop.operands[2], every)
    memo: dict[Value, str | None] = {}
    return [n for n, load in enumerate(feeds)
            if stride_kind(load.operands[0], iv, count, every, inside, memo) == "uniform"]
