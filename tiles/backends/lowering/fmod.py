"""C's fmod, exactly, from integer operations: for targets without a math library.

GPU compilers expand ``frem`` as ``x - trunc(x / y) * y``, which is wrong once the quotient
is large.  This is the long division on the significands instead: both operands are
unpacked to integer significands with exponents (subnormals normalized), the divisor is
subtracted wherever it fits while the dividend's exponent walks down to the divisor's, and
the remainder is renormalized and packed with the dividend's sign.  Special cases: a NaN
operand, an infinite x or a zero y give NaN; |x| < |y| gives x; |x| == |y| gives a zero
with x's sign.
"""

from __future__ import annotations

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType
from ...core.ops import Op
from .emitter import Emitter, Handle


def exact_fmod(e: Emitter, x: Handle, y: Handle, dtype: DType) -> Handle:
    """fmod(x, y) for float32 or float64 handles."""
    wide = dtype.bits == 64
    U = D.uint64 if wide else D.uint32  # noqa: N806
    I = D.int32  # noqa: N806, E741
    bits, mbits = (64, 52) if wide else (32, 23)
    sign, implicit = 1 << (bits - 1), 1 << mbits
    emax = (1 << (bits - 1 - mbits)) - 1

    def u(v: int) -> Handle:
        return e.constant(v, U)

    def i(v: int) -> Handle:
        return e.constant(v, I)

    def b(op: Op, p: Handle, q: Handle, t: DType) -> Handle:
        return e.binary(op, p, q, t)

    ux, uy = e.bitcast(x, dtype, U), e.bitcast(y, dtype, U)
    ax, ay = b(Op.AND, ux, u(sign - 1), U), b(Op.AND, uy, u(sign - 1), U)
    ex = e.cast(b(Op.SHR, ax, u(mbits), U), U, I)
    ey = e.cast(b(Op.SHR, ay, u(mbits), U), U, I)
    inf_bits = emax << mbits
    special = b(Op.OR, b(Op.OR, b(Op.EQ, ay, u(0), U), b(Op.GT, ay, u(inf_bits), U), D.int1),
                b(Op.EQ, ex, i(emax), I), D.int1)
    small = b(Op.LE, ax, ay, U)
    skip = b(Op.OR, special, small, D.int1)

    def unpack(a: Handle, exp: Handle) -> list[Handle]:
        sub = b(Op.EQ, exp, i(0), I)
        m = e.select(sub, a, b(Op.OR, b(Op.AND, a, u(implicit - 1), U), u(implicit), U), U)
        return normalize(m, e.select(sub, i(1), exp, I))

    def normalize(m: Handle, exp: Handle) -> list[Handle]:
        def low(r: list[Handle]) -> Handle:
            return b(Op.AND, b(Op.LT, r[0], u(implicit), U), b(Op.NE, r[0], u(0), U), D.int1)
        return e.while_loop([(m, U), (exp, I)], low,
                            lambda r: [b(Op.SHL, r[0], u(1), U), b(Op.SUB, r[1], i(1), I)])

    mx, ex = unpack(ax, ex)
    my, ey = unpack(ay, ey)
    ex = e.select(skip, ey, ex, I)  # nothing to divide: the loop is skipped

    def step(r: list[Handle]) -> list[Handle]:
        fits = b(Op.GE, r[0], my, U)
        rest = e.select(fits, b(Op.SUB, r[0], my, U), r[0], U)
        return [b(Op.SHL, rest, u(1), U), b(Op.SUB, r[1], i(1), I)]

    mx, ex = e.while_loop([(mx, U), (ex, I)],
                          lambda r: b(Op.AND, b(Op.GT, r[1], ey, I), b(Op.NE, r[0], u(0), U), D.int1), step)
    mx = e.select(b(Op.GE, mx, my, U), b(Op.SUB, mx, my, U), mx, U)
    zero = b(Op.EQ, mx, u(0), U)
    mx, ex = normalize(mx, ex)
    normal = b(Op.OR, b(Op.SUB, mx, u(implicit), U), b(Op.SHL, e.cast(ex, I, U), u(mbits), U), U)
    shift = e.cast(b(Op.SUB, i(1), ex, I), I, U)
    packed = b(Op.OR, e.select(b(Op.GT, ex, i(0), I), normal, b(Op.SHR, mx, shift, U), U),
               b(Op.AND, ux, u(sign), U), U)
    signed_zero = b(Op.MUL, x, e.constant(0.0, dtype), dtype)
    out = e.select(zero, signed_zero, e.bitcast(packed, U, dtype), dtype)
    out = e.select(small, e.select(b(Op.EQ, ax, ay, U), signed_zero, x, dtype), out, dtype)
    xy = b(Op.MUL, x, y, dtype)
    return e.select(special, b(Op.DIV, xy, xy, dtype), out, dtype)
