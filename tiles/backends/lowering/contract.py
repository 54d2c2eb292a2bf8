"""Multiply-add contraction (Triton's ``enable_fp_fusion``): ``a * b + c`` computed as one FMA.

``Kernel -> Kernel``, run by ``prepare.prepare`` when ``Options.fp_fusion`` is set.  A float32 or
float64 ADD or SUB with an operand that is the result of a MUL used nowhere else becomes an FMA
(``a*b + c``, ``c + a*b``, ``a*b - c`` as ``fma(a, b, -c)``, ``c - a*b`` as ``fma(-a, b, c)``),
rounding once where the IR rounds twice: the result may differ from the interpreter's by the
rounding the MUL no longer does.  libdevice's ``mul_rn``/``add_rn``/``sub_rn`` are traced as
FMAs themselves, so they are never contracted.
"""

from __future__ import annotations

from collections import Counter

from ...core import dtypes as D
from ...core.ir import Block, Instr, Kernel, Value
from ...core.ops import Op

_CONTRACTED_DTYPES = (D.float32, D.float64)


def contract_multiply_adds(kernel: Kernel) -> Kernel:
    """``kernel`` with every single-use float32/float64 product feeding an ADD or SUB of the same
    block fused into it (a product from outside a loop stays there: fusing would redo it per trip)."""
    uses: Counter[Value] = Counter()
    _count_uses(kernel.body, uses)
    _contract(kernel.body, uses)
    return kernel


def _count_uses(block: Block, uses: Counter[Value]) -> None:
    for instr in block.instrs:
        uses.update(instr.operands)
        for region in instr.regions:
            _count_uses(region, uses)
    uses.update(block.yields)


def _contract(block: Block, uses: Counter[Value]) -> None:
    products: dict[Value, Instr] = {}
    fused: set[Instr] = set()
    out: list[Instr] = []
    for instr in block.instrs:
        for region in instr.regions:
            _contract(region, uses)
        if instr.op is Op.MUL and instr.result.type.dtype in _CONTRACTED_DTYPES and uses[instr.result] == 1:
            products[instr.result] = instr
        out.extend(_fuse(instr, products, fused) or [instr])
    if fused:
        block.instrs = [i for i in out if i not in fused]


def _fuse(instr: Instr, products: dict[Value, Instr], fused: set[Instr]) -> list[Instr] | None:
    if instr.op not in (Op.ADD, Op.SUB) or instr.result.type.dtype not in _CONTRACTED_DTYPES:
        return None
    x, y = instr.operands
    if x in products:
        product, other, negate_product = products.pop(x), y, False
    elif y in products:
        product, other, negate_product = products.pop(y), x, instr.op is Op.SUB
    else:
        return None
    a, b = product.operands
    before: list[Instr] = []
    if negate_product:  # c - a*b = fma(-a, b, c)
        a = _negated(a, instr, before)
    elif instr.op is Op.SUB:  # a*b - c = fma(a, b, -c)
        other = _negated(other, instr, before)
    fused.add(product)
    return [*before, Instr(Op.FMA, (a, b, other), instr.results, None, (), instr.loc)]


def _negated(v: Value, at: Instr, before: list[Instr]) -> Value:
    result = Value(v.type)
    before.append(Instr(Op.NEG, (v,), (result,), None, (), at.loc))
    return result
