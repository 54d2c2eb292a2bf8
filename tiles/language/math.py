"""``tl.math``: the math functions under Triton's ``tl.math`` names."""

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
