"""NVIDIA libdevice's name of each math function (the rows of ``core/mathfns.py``), called by
``mathfn.py`` on targets that link libdevice (``LLVMTarget.libdevice``).

By default a function ``name`` is ``__nv_<name>f`` on float32 and ``__nv_<name>`` on float64
(``__nv_<name>`` / ``__nv_<name>ll`` on 32- / 64-bit integers).  An entry gives another base
name, or the explicit (32-bit, 64-bit) pair, ``""`` where libdevice has none.
"""

from __future__ import annotations

from ...core.mathfns import MathFunction

NAMES: dict[str, str | tuple[str, str]] = {
    "div_rz": ("__nv_fdiv_rz", ""),
    "div_rd": ("__nv_fdiv_rd", ""),
    "div_ru": ("__nv_fdiv_ru", ""),
    "isinf": ("__nv_isinff", "__nv_isinfd"),
    "isfinited": ("__nv_finitef", "__nv_isfinited"),
    "finitef": ("__nv_finitef", "__nv_isfinited"),
    "signbit": ("__nv_signbitf", "__nv_signbitd"),
    "fast_expf": ("__nv_fast_expf", ""),
    "fast_exp10f": ("__nv_fast_exp10f", ""),
    "fast_logf": ("__nv_fast_logf", ""),
    "fast_log2f": ("__nv_fast_log2f", ""),
    "fast_log10f": ("__nv_fast_log10f", ""),
    "fast_sinf": ("__nv_fast_sinf", ""),
    "fast_cosf": ("__nv_fast_cosf", ""),
    "fast_tanf": ("__nv_fast_tanf", ""),
    "fast_powf": ("__nv_fast_powf", ""),
    "fast_dividef": ("__nv_fast_fdividef", ""),
}


def symbol(fn: MathFunction, bits: int) -> str:
    """The libdevice function of ``fn`` for an operand of ``bits`` (32 or 64); "" when there is none."""
    base = NAMES.get(fn.name, fn.name)
    if isinstance(base, tuple):
        return base[0] if bits == 32 else base[1]
    if not base:
        return ""
    if fn.operands[0] == "n":
        return f"__nv_{base}" + ("ll" if bits == 64 else "")
    if bits == 64 and fn.f32_only:
        return ""
    return f"__nv_{base}" + ("f" if bits == 32 else "")
