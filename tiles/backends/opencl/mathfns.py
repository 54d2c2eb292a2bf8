"""The OpenCL C spelling of each math function (the rows of ``core/mathfns.py``).

A function without an entry here is OpenCL's builtin of the same name, ``name(x, ...)``.  An
entry's ``expr`` is a C expression over ``{0}``, ``{1}``... (``{u}``: the unsigned type of an
integer operand), ``""`` where OpenCL has no builtin (the function is then unsupported on
OpenCL, with an error naming it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.dtypes import DType, float32
from ...core.mathfns import MathFunction


@dataclass(frozen=True)
class Spelling:
    expr: str | None = None  # None: "name({0}, ...)"; "": absent
    helper: str = ""  # OpenCL C helper functions the expression calls (added once to the program)
    f32_only: bool = False  # the spelling exists for float32 operands only (it computes in double)


def _directed_div(toward: str, cmp: str) -> str:
    q = "((double){0} / {1})"
    return f"((double)(float){q} {cmp} {q} ? nextafter((float){q}, {toward}) : (float){q})"


# float32 erfinv (OpenCL has no builtin): Winitzki's closed form (a = 0.147, about 2e-3 relative)
# refined by two Halley steps on erf(x) - y in double, then rounded once.
ERFINV_HELPER = """\
inline float tiles_erfinv(float yf) {
  double y = (double)yf;
  if (!(fabs(y) < 1.0)) return fabs(y) == 1.0 ? copysign(INFINITY, yf) : NAN;
  if (y == 0.0) return yf;
  double l = log((1.0 - y) * (1.0 + y)), t = 2.0 / (M_PI * 0.147) + 0.5 * l;
  double x = copysign(sqrt(sqrt(t * t - l / 0.147) - t), y);
  for (int i = 0; i < 2; i++) {
    double f = erf(x) - y, d = M_2_SQRTPI * exp(-x * x);
    x -= f / (d + x * f);
  }
  return (float)x;
}
"""

# bit reversal (no builtin): swap halves, then ever smaller neighbouring groups.
BREV_HELPER = """\
inline uint tiles_brev_uint(uint x) {
  x = (x >> 16) | (x << 16);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  return ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
}
inline ulong tiles_brev_ulong(ulong x) {
  return ((ulong)tiles_brev_uint((uint)x) << 32) | (ulong)tiles_brev_uint((uint)(x >> 32));
}
"""

_ABSENT = Spelling("")

SPELLINGS: dict[str, Spelling] = {
    # OpenCL leaves FP_ILOGB0/FP_ILOGBNAN to the platform
    "ilogb": Spelling("((({0}) == 0 || isnan({0})) ? INT_MIN : (isinf({0}) ? INT_MAX : ilogb({0})))"),
    "rcbrt": Spelling("(1 / cbrt({0}))"),
    "scalbn": Spelling("ldexp({0}, {1})"),
    "erfcx": _ABSENT,
    "erfinv": Spelling("tiles_erfinv({0})", ERFINV_HELPER, f32_only=True),
    "j0": _ABSENT, "j1": _ABSENT, "y0": _ABSENT, "y1": _ABSENT,
    "nearbyint": Spelling("rint({0})"),
    "llrint": Spelling("(isnan({0}) ? 0L : convert_long_sat_rte({0}))"),
    "llround": Spelling("(isnan({0}) ? 0L : convert_long_sat(round({0})))"),
    "div_rz": Spelling("(fabs((double)(float)((double){0} / {1})) > fabs((double){0} / {1}) ? "
                       "nextafter((float)((double){0} / {1}), 0.0f) : (float)((double){0} / {1}))"),
    "div_rd": Spelling(_directed_div("-INFINITY", ">")),
    "div_ru": Spelling(_directed_div("INFINITY", "<")),
    "saturatef": Spelling("(fmin(fmax({0}, 0.0f), 1.0f) + 0.0f)"),
    "isinf": Spelling("(isinf({0}) != 0)"),
    "isfinited": Spelling("(isfinite({0}) != 0)"),
    "finitef": Spelling("(isfinite({0}) != 0)"),
    "signbit": Spelling("(signbit({0}) != 0)"),
    "fast_expf": Spelling("exp({0})"),
    "fast_exp10f": Spelling("exp10({0})"),
    "fast_logf": Spelling("log({0})"),
    "fast_log2f": Spelling("log2({0})"),
    "fast_log10f": Spelling("log10({0})"),
    "fast_sinf": Spelling("sin({0})"),
    "fast_cosf": Spelling("cos({0})"),
    "fast_tanf": Spelling("tan({0})"),
    "fast_powf": Spelling("pow({0}, {1})"),
    "fast_dividef": Spelling("({0} / {1})"),
    "clz": Spelling("(int)clz({0})"),
    "popc": Spelling("(int)popcount({0})"),
    "ffs": Spelling("({0} == 0 ? 0 : (int)popcount((({u}){0} & -({u}){0}) - 1) + 1)"),
    "brev": Spelling("tiles_brev_{u}(({u}){0})", BREV_HELPER),
}


def spelling(fn: MathFunction) -> Spelling:
    return SPELLINGS.get(fn.name, Spelling())


def expr(fn: MathFunction, args: list[str], u: str = "") -> str:
    """The OpenCL C expression of ``fn`` on ``args`` ("" where OpenCL has none); ``u`` names the
    unsigned type of an integer operand."""
    template = spelling(fn).expr
    if template is None:
        template = f"{fn.name}(" + ", ".join(f"{{{i}}}" for i in range(len(args))) + ")"
    return template.format(*args, u=u) if template else ""


def available(fn: MathFunction, operand: DType) -> bool:
    """Whether OpenCL has a spelling of ``fn`` for operands of this type."""
    s = spelling(fn)
    return s.expr != "" and not (s.f32_only and operand != float32)
