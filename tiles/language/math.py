"""``tl.math``: Triton's ``tl.math`` names, plus every libdevice function (as Triton 2.x had them).

The libdevice functions come from the table in ``core/mathfns.py`` (one IR op, MATH_FN, per
call); the ones with an IR op of their own (exp, sqrt, fma, fmod, ...) call that op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import attrs as A
from ..core import dtypes as D
from ..core import mathfns
from ..core.ops import Op
from . import semantic as S
from .core import (  # noqa: F401
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    isnan,
    log,
    log2,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)
from .core import maximum as max  # noqa: F401
from .core import minimum as min  # noqa: F401
from .tensor import tensor


def call(name: str, *args: Any) -> tensor:
    """Trace the MATH_FN ``name`` on ``args`` (numbers become tiles; two float operands are
    promoted and broadcast together as arithmetic does)."""
    fn = mathfns.FUNCTIONS[name]
    kinds = fn.operands
    if len(args) != len(kinds):
        raise S.error(f"libdevice.{name} takes {len(kinds)} argument(s), got {len(args)}")
    if kinds == "ff":
        x, y, _ = S._pair(args[0], args[1])
        operands = [x, y]
    elif kinds == "fi":
        x = S.to_tensor(args[0])
        n = S.to_tensor(args[1])
        if not n.dtype.is_int:  # type: ignore[union-attr]
            raise S.error(  # noqa: B904  (__cause__ is the bare error)
            f"libdevice.{name} needs an integer exponent, got {n.dtype}")
        shape = S.broadcast_shapes(x.shape, n.shape)
        operands = [S.broadcast_to(x, shape), S.broadcast_to(S.cast(n, D.int32), shape)]
    else:
        operands = [S.to_tensor(args[0])]
    types = [t.dtype for t in operands]
    try:
        mathfns.result_type(name, types)  # type: ignore[arg-type]
    except TypeError:
        got = ", ".join(dict.fromkeys(str(t) for t in types))
        fix = "; convert first with x.to(tl.float32)" if "f" in kinds else "; convert first with x.to(tl.int32)"
        raise S.error(  # noqa: B904  (__cause__ is the bare error)
            f"libdevice.{name} needs {mathfns.describe_operands(fn)} (as Triton's libdevice), "
            f"got {got}{fix}")
    return S.emit(Op.MATH_FN, operands, A.MathFn(name))


def _make(name: str) -> Callable[..., tensor]:
    fn = mathfns.FUNCTIONS[name]

    def f(*args: Any) -> tensor:
        return call(name, *args)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"libdevice {name}: {fn.doc} (elementwise; {mathfns.describe_operands(fn)})."
    return f


def _float_only(name: str, op: Callable[..., tensor]) -> Callable[..., tensor]:
    def f(*args: Any) -> tensor:
        ts = [S.to_tensor(a) for a in args]
        if not all(t.dtype in (D.float32, D.float64) for t in ts):
            raise S.error(  # noqa: B904  (__cause__ is the bare error)
            f"libdevice.{name} needs float32 or float64 operands (as Triton's libdevice), "
                          f"got {', '.join(str(t.dtype) for t in ts)}; convert first with x.to(tl.float32)")
        return op(*args)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"libdevice {name} (float32/float64), computed by the IR op of the same meaning."
    return f


def _not_supported(name: str, why: str) -> Callable[..., tensor]:
    def f(*args: Any, **kwargs: Any) -> tensor:
        raise S.error(f"libdevice.{name} is not supported by tiles: {why}")
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Not supported: {why}."
    return f


# libdevice names computed by an existing IR op (accuracy as that op's on each backend).
_BY_OP: dict[str, Callable[..., tensor]] = {
    "exp": exp, "exp2": exp2, "log": log, "log2": log2, "sqrt": sqrt, "sqrt_rn": sqrt,
    "rsqrt": rsqrt, "rsqrt_rn": rsqrt, "sin": sin, "cos": cos, "erf": erf, "floor": floor,
    "ceil": ceil, "fma": fma, "fma_rn": fma, "div_rn": lambda x, y: S.truediv(x, y, approximate=False),
    "fmod": S.mod,
    # one rounding each, spelled as FMAs so multiply-add contraction (enable_fp_fusion) never fuses them
    "add_rn": lambda x, y: S.fma(x, 1.0, y), "sub_rn": lambda x, y: S.fma(y, -1.0, x),
    "mul_rn": lambda x, y: S.fma(x, y, -0.0), "rcp_rn": lambda x: S.truediv(1.0, x),
    "fmin": lambda x, y: S.minmax("min", x, y), "fmax": lambda x, y: S.minmax("max", x, y),
}

LIBDEVICE: dict[str, Callable[..., tensor]] = {
    **{name: _make(name) for name in mathfns.FUNCTIONS},
    **{name: _float_only(name, op) for name, op in _BY_OP.items()},
    "abs": abs, "isnan": isnan, "mulhi": umulhi, "umulhi": umulhi,
    **{name: _not_supported(name, why) for name, why in mathfns.NOT_SUPPORTED.items()
       if name not in mathfns.FUNCTIONS},
}
"""Every libdevice name: tiles.language.extra.libdevice (and .cuda/.hip) export exactly these."""

_TRITON_MATH = ("abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "isnan", "log",
                "log2", "max", "min", "rsqrt", "sigmoid", "sin", "sqrt", "sqrt_rn", "umulhi")
globals().update({k: v for k, v in LIBDEVICE.items() if k not in _TRITON_MATH})
__all__ = sorted({*_TRITON_MATH, *LIBDEVICE})
