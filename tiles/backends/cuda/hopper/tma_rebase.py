"""Block-pointer loads of a ``tl.dot`` loop put in the shape TMA copies (``tma_claim.claim``).

A block pointer's load is a DESC_LOAD bounded on its ``boundary_check`` axes (``tl.load`` of a
``tl.make_block_ptr``), but in the forms users write its base is rarely a parameter
(``K + off_z * stride_kz + off_h * stride_kh``) and attention's K runs down its first axis
(order ``(0, 1)``).
Each rewrite below keeps the access's meaning exactly, so a load TMA then does not take is
still right when spelled as pointers; ``claim`` also undoes the rewrites of loops it does not
take, to leave those as they were traced.

- A 2-D block whose first axis has stride 1 and whose last has not becomes the transpose
  (``PERMUTE``) of the block with its axes swapped, as a descriptor's ``desc.load(...).T``.
- A base ``param + off`` (through any chain of pointer additions), with axis 0 not bounded and
  ``off`` a sum of run-time values times host-known factors (parameters, constants), becomes
  ``param + (off - q * stride0)`` at row offset ``offset0 + q``, ``q = off // stride0``; the
  factors go in ``attrs.rebased``.  The host checks that each is a multiple of ``stride0``
  (then ``off - q * stride0`` is 0 and the map's base is the parameter, ``tma_spec.MapSpec``);
  a launch where one is not runs the kernel compiled without TMA.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ....core import attrs as A  # noqa: N812
from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.dtypes import PointerType
from ....core.ir import Block, Instr, Kernel, TileType, Value
from ....core.ops import Op
from ...lowering.induction import Emit, close_induction_pointers
from .tma_spec import Source


def _int64(emit: Emit, v: Value) -> Value:
    if v.type.element == D.int64:  # type: ignore[union-attr]
        return v
    return emit(Op.CAST, (v,), TileType(D.int64, ()), A.Cast(D.int64))


def _factors(v: Value, host: Callable[[Value], Source | None], defs: dict[Value, Instr],
             depth: int = 8) -> list[Source] | None:
    """Host-known factors ``c_i`` with ``v == sum(x_i * c_i)`` for some run-time integers ``x_i``."""
    known = host(v)
    if known is not None:
        return [known]
    d = defs.get(v)
    if d is None or depth == 0 or v.type.shape:
        return None
    if d.op is Op.CAST and d.operands[0].type.element.is_int \
            and d.operands[0].type.element.is_signed:  # type: ignore[union-attr]
        return _factors(d.operands[0], host, defs, depth - 1)
    if d.op in (Op.ADD, Op.SUB):
        parts = [_factors(o, host, defs, depth - 1) for o in d.operands]
        return None if None in parts else [s for p in parts for s in p]  # type: ignore[union-attr]
    if d.op is Op.MUL:
        for x, c in (d.operands, reversed(d.operands)):
            known = host(c)
            if known is not None:
                return [known]
            inner = _factors(x, host, defs, depth - 1)
            if inner is not None:
                return inner
    return None


def _swapped(instr: Instr) -> tuple[Instr, Value]:
    """``instr``'s block with its two axes swapped, and the value it loads (before the permute)."""
    ops = descriptor_operands(instr)
    a: A.Descriptor = instr.attrs
    rows, cols = a.block_shape
    bounded = None if a.bounded is None else (a.bounded[1], a.bounded[0])
    loaded = Value(TileType(instr.result.type.dtype, (cols, rows)))
    load = Instr(Op.DESC_LOAD, (ops.base, *ops.shape[::-1], *ops.strides[::-1], *ops.offsets[::-1]), (loaded,),
                 dataclasses.replace(a, block_shape=(cols, rows), bounded=bounded), loc=instr.loc)
    return load, loaded


def rewrite_load(instr: Instr, kernel: Kernel, defs: dict[Value, Instr],
                 host: Callable[[Value], Source | None]) -> list[Instr] | None:
    """The instructions that replace the block-pointer DESC_LOAD ``instr``, or None when neither
    rewrite applies."""
    a: A.Descriptor = instr.attrs
    if a.bounded is None or a.rebased:
        return None
    emit = Emit(instr.loc)
    load = instr
    ops = descriptor_operands(load)
    changed = False
    permute: Instr | None = None
    unit = Source(None, 1)
    if len(a.block_shape) == 2 and host(ops.strides[0]) == unit and host(ops.strides[1]) != unit:
        load, loaded = _swapped(load)
        permute = Instr(Op.PERMUTE, (loaded,), instr.results, A.Permute((1, 0)), loc=instr.loc)
        changed = True
    ops = descriptor_operands(load)
    params = {p.value for p in kernel.params}
    base, terms = ops.base, []
    while base not in params and base in defs and defs[base].op is Op.ADDPTR:
        base, off = defs[base].operands
        terms.append(off)
    rebased = [_factors(t, host, defs) for t in terms]
    if terms and base in params and not load.attrs.is_bounded(0) and None not in rebased \
            and not isinstance(base.type.dtype.element, PointerType):  # type: ignore[union-attr]
        total = _int64(emit, terms[0])
        for t in terms[1:]:
            total = emit(Op.ADD, (total, _int64(emit, t)), TileType(D.int64, ()))
        scalar64, scalar32 = TileType(D.int64, ()), TileType(D.int32, ())
        q = emit(Op.IDIV, (total, ops.strides[0]), scalar64)
        rest = emit(Op.SUB, (total, emit(Op.MUL, (q, ops.strides[0]), scalar64)), scalar64)
        new_base = emit(Op.ADDPTR, (base, rest), base.type)
        row = emit(Op.ADD, (ops.offsets[0], emit(Op.CAST, (q,), scalar32, A.Cast(D.int32))), scalar32)
        n = load.attrs.ndim
        operands = list(load.operands)
        operands[0], operands[1 + 2 * n] = new_base, row
        factors = tuple(s for part in rebased for s in part)  # type: ignore[union-attr]
        load = dataclasses.replace(load, operands=tuple(operands),
                                   attrs=dataclasses.replace(load.attrs, rebased=factors))
        changed = True
    if not changed:
        return None
    return [*emit.instrs, load, *(() if permute is None else (permute,))]


def _dot_loops(kernel: Kernel) -> list[Instr]:
    return [i for i in kernel.walk() if i.op is Op.FOR and any(d.op is Op.DOT for d in i.regions[0].instrs)]


def rewrite_dot_loops(kernel: Kernel, source: Callable[[Value, dict[Value, Instr]], Source | None],
                      top_level: bool = False) -> Callable[[set[int]], None]:
    """Rewrites (in place) the block-pointer loads directly in the bodies of loops that run a DOT
    (and with ``top_level`` those at the kernel's top level, for a producer: ``persistent.py``);
    returns ``keep_only(taken)``, which restores every such body whose new loads are not all in
    ``taken`` (ids of the DESC_LOADs TMA takes).  Such loops first get their carried offsets in
    closed form (``induction.py``): TMA's coordinates must be known ahead, and whether they are
    aligned."""
    if any(i.op is Op.DESC_LOAD and i.attrs.bounded is not None for loop in _dot_loops(kernel)
           for i in loop.regions[0].instrs):
        kernel.body = close_induction_pointers(kernel).body
    defs = {r: i for i in kernel.walk() for r in i.results}

    def host(v: Value) -> Source | None:
        """How the host computes ``v`` (``tma_claim._source``), or None."""
        return source(v, defs)
    done: list[tuple[Block, list[Instr], list[Instr]]] = []
    for body in [loop.regions[0] for loop in _dot_loops(kernel)] + ([kernel.body] if top_level else []):
        out: list[Instr] = []
        new_loads: list[Instr] = []
        for instr in body.instrs:
            replaced = rewrite_load(instr, kernel, defs, host) if instr.op is Op.DESC_LOAD else None
            if replaced is None:
                out.append(instr)
                continue
            for i in replaced:
                defs.update((r, i) for r in i.results)
            new_loads += [i for i in replaced if i.op is Op.DESC_LOAD]
            out += replaced
        if new_loads:
            done.append((body, body.instrs, new_loads))
            body.instrs = out

    def keep_only(taken: set[int]) -> None:
        for body, before, new_loads in done:
            if not all(id(i) in taken for i in new_loads):
                body.instrs = before
    return keep_only
