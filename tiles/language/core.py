"""Creation, shape, cast and math functions of ``tiles.language``."""

from __future__ import annotations

import functools
from typing import Any

from ..core import attrs as A
from ..core import dtypes as D
from ..core.builder import current, user_loc
from ..core.errors import CompileTimeAssertionFailure
from ..core.ops import Op
from . import semantic as S
from .constexpr import constexpr, constexpr_type  # noqa: F401  (tl.core.constexpr, tl.core.constexpr_type)
from .tensor import METHODS, tensor


def program_id(axis: Any) -> tensor:
    """The index of this program along grid axis ``axis`` (0, 1 or 2), an int32 scalar."""
    axis = S.unwrap(axis)
    if axis not in (0, 1, 2):
        raise S.error(f"program_id axis must be 0, 1, or 2 but got {axis!r}")
    return S.wrap(current().emit1(Op.PROGRAM_ID, [], A.Axis(axis)))


def num_programs(axis: Any) -> tensor:
    """How many programs the launch has along grid axis ``axis`` (0, 1 or 2), an int32 scalar."""
    axis = S.unwrap(axis)
    if axis not in (0, 1, 2):
        raise S.error(f"num_programs axis must be 0, 1 or 2, got {axis!r}")
    return S.wrap(current().emit1(Op.NUM_PROGRAMS, [], A.Axis(axis)))


def arange(start: Any, end: Any) -> tensor:
    """The int32 tile ``start, start + 1, ..., end - 1``; ``end - start`` must be a power of two."""
    start, end = S.unwrap(start), S.unwrap(end)
    if not isinstance(start, int) or not isinstance(end, int):
        raise S.error("tl.arange bounds must be compile-time integers (tl.constexpr), "
                      f"got {start!r}, {end!r}")
    n = end - start
    if n <= 0 or n & (n - 1):
        raise S.error(f"tl.arange(start, end) needs end - start to be a positive power of two, "
                      f"got {n}; round up with tiles.next_power_of_2 and mask the extra lanes")
    if not (-(2**31) <= start and end <= 2**31):
        raise S.error("tl.arange bounds must fit in int32")
    return S.wrap(current().emit1(Op.ARANGE, [], A.Arange(start, end)))


def full(shape: Any, value: Any, dtype: Any) -> tensor:
    """A tile of ``shape`` and ``dtype`` with every element equal to ``value``."""
    shape = S.unwrap(shape)
    shape = S.shape_arg(shape if isinstance(shape, (tuple, list)) else (shape,))
    dtype = S.as_dtype(dtype)
    value = S.unwrap(value)
    if isinstance(value, tensor):
        return S.broadcast_to(S.cast(value, dtype), shape)
    return S.const(value, dtype, shape)


def zeros(shape: Any, dtype: Any) -> tensor:
    """A tile of ``shape`` and ``dtype`` filled with zeros."""
    return full(shape, 0, dtype)


def zeros_like(x: tensor) -> tensor:
    """A tile of zeros with the shape and dtype of ``x``."""
    return full(x.shape, 0, x.dtype)


def full_like(x: tensor, value: Any) -> tensor:
    """A tile with the shape and dtype of ``x`` and every element equal to ``value``."""
    return full(x.shape, value, x.dtype)


def cast(x: Any, dtype: Any, fp_downcast_rounding: str | None = None, bitcast: bool = False) -> tensor:
    """``x`` converted to ``dtype`` by value, or its bits reinterpreted with ``bitcast=True``."""
    return S.cast(x, dtype, bitcast=bitcast, rounding=fp_downcast_rounding)


def to_tensor(x: Any) -> tensor:
    """``x`` as a tile: Python numbers and constexprs become scalar tiles, tiles pass through."""
    return S.to_tensor(x)


def where(condition: Any, x: Any, y: Any) -> tensor:
    """Elementwise choice: ``x`` where ``condition`` is true, ``y`` elsewhere (operands broadcast)."""
    return S.where(condition, x, y)


# shape -------------------------------------------------------------------

def reshape(x: Any, *shape: Any, can_reorder: bool = False) -> tensor:
    """``x`` with a new shape of the same element count, elements kept in row-major order."""
    return S.reshape(x, S.shape_arg(shape))


def view(x: Any, *shape: Any) -> tensor:
    """``x`` with a new shape of the same element count (in tiles the same as ``reshape``)."""
    return S.reshape(x, S.shape_arg(shape))


def trans(x: Any, *dims: Any) -> tensor:
    """``x`` with its axes reordered by ``dims``; without ``dims`` a 2D tile is transposed."""
    return S.trans(x, *dims)


def permute(x: Any, *dims: Any) -> tensor:
    """``x`` with its axes reordered: axis ``i`` of the result is axis ``dims[i]`` of ``x``."""
    return S.permute(x, S.shape_arg(dims))


def expand_dims(x: Any, axis: Any) -> tensor:
    """``x`` with a new length-1 axis at ``axis`` (or at each axis of a sequence)."""
    return S.expand_dims(x, axis)


def broadcast_to(x: Any, *shape: Any) -> tensor:
    """``x`` repeated along its length-1 (or missing leading) axes to ``shape``."""
    return S.broadcast_to(x, S.shape_arg(shape))


def broadcast(x: Any, y: Any) -> tuple[tensor, tensor]:
    """``x`` and ``y`` both broadcast to their common shape, as a pair."""
    a, b = S.to_tensor(x), S.to_tensor(y)
    shape = S.broadcast_shapes(a.shape, b.shape)
    return S.broadcast_to(a, shape), S.broadcast_to(b, shape)


def join(a: Any, b: Any) -> tensor:
    """``a`` and ``b`` stacked along a new last axis of length 2."""
    x, y = S.to_tensor(a), S.to_tensor(b)
    if x.dtype != y.dtype:
        raise S.error(f"tl.join needs equal dtypes, got {x.dtype} and {y.dtype}")
    shape = S.broadcast_shapes(x.shape, y.shape)
    return S.emit(Op.JOIN, [S.broadcast_to(x, shape), S.broadcast_to(y, shape)])


def split(a: tensor) -> tuple[tensor, tensor]:
    """The two halves of ``a`` along its last axis, which must have length 2 (undoes ``join``)."""
    return S.split(a)


def cat(a: tensor, b: tensor, can_reorder: bool = False, dim: Any = 0) -> tensor:
    """``a`` followed by ``b`` along axis ``dim`` (0 by default; negative counts from the end): same
    dtype and rank, the other axes of equal size."""
    a, b = S.to_tensor(a), S.to_tensor(b)
    rank = len(a.shape)
    axis = S.unwrap(dim)
    if not isinstance(axis, int) or not -rank <= axis < max(rank, 1):
        raise S.error(f"tl.cat: invalid axis {axis} for tiles of rank {rank}")
    axis %= max(rank, 1)
    others = [i for i in range(rank) if i != axis]
    if a.dtype != b.dtype or len(b.shape) != rank or any(a.shape[i] != b.shape[i] for i in others):
        raise S.error(f"tl.cat needs equal dtypes and ranks, and equal sizes except along axis {axis}; "
                      f"got {a.type} and {b.type}")
    if axis == 0:
        return S.emit(Op.CAT, [a, b])
    order = [axis, *others]  # the axis to the front, joined there, moved back
    joined = S.emit(Op.CAT, [S.permute(a, order), S.permute(b, order)])
    return S.permute(joined, [order.index(i) for i in range(rank)])


def ravel(x: tensor, can_reorder: bool = False) -> tensor:
    """``x`` flattened to one axis in row-major order."""
    return S.reshape(x, (x.numel,))


# math --------------------------------------------------------------------

def _math1(name: str):
    def fn(x: Any) -> tensor:
        return S.unary_math(name, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a floating-point tile."
    return fn


exp = _math1("exp")
exp2 = _math1("exp2")
log = _math1("log")
log2 = _math1("log2")
sqrt = _math1("sqrt")
sqrt_rn = _math1("sqrt")
rsqrt = _math1("rsqrt")
sin = _math1("sin")
cos = _math1("cos")
erf = _math1("erf")
floor = _math1("floor")
ceil = _math1("ceil")
abs = _math1("abs")  # noqa: A001


def fdiv(x: Any, y: Any, ieee_rounding: bool = False, approx: bool = False) -> tensor:
    """Floating-point division ``x / y`` (integer operands are refused, as Triton refuses them):
    IEEE-rounded with ``ieee_rounding``, else as ``/`` (also with ``approx``: Triton's 2-ulp bound,
    float32 only, which ``/``'s declared accuracy meets)."""
    ieee_rounding, approx = bool(S.unwrap(ieee_rounding)), bool(S.unwrap(approx))
    if ieee_rounding and approx:
        raise S.error("fdiv: approx and ieee_rounding cannot both be True")
    return S.fdiv(x, y, precise=ieee_rounding, name="fdiv", float32_only=approx)


def div_rn(x: Any, y: Any) -> tensor:
    """Floating-point division ``x / y`` rounded to the nearest representable value, of float32
    tiles (as Triton's ``tl.math.div_rn``; ``libdevice.div_rn`` takes float64 too)."""
    for t in (S.unwrap(x), S.unwrap(y)):
        if isinstance(t, tensor) and t.dtype != D.float32:
            raise S.error(f"div_rn needs float32 tiles (as Triton's), got {t.dtype}; convert first with "
                          "x.to(tl.float32), or use tl.fdiv(x, y, ieee_rounding=True)")
    return S.fdiv(x, y, precise=True, name="div_rn")


def fma(x: Any, y: Any, z: Any) -> tensor:
    """``x * y + z`` elementwise, rounded once (fused multiply-add)."""
    return S.fma(x, y, z)


def umulhi(x: Any, y: Any) -> tensor:
    """The upper half of the double-width unsigned product of the bits of ``x`` and ``y`` (int32,
    int64, uint32 or uint64 tiles; signed ones multiply as unsigned, as in Triton), elementwise."""
    return S.umulhi(x, y)


class PropagateNan:
    """NaN policy of ``maximum``/``minimum``/``clamp``: ``ALL`` returns NaN if an operand is NaN, ``NONE`` need not."""
    NONE = 0
    ALL = 0xFFFF


def maximum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
    """Elementwise maximum of ``x`` and ``y``; ``propagate_nan`` says what a NaN operand gives."""
    return S.minmax("max", x, y, bool(S.unwrap(propagate_nan)))


def minimum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
    """Elementwise minimum of ``x`` and ``y``; ``propagate_nan`` says what a NaN operand gives."""
    return S.minmax("min", x, y, bool(S.unwrap(propagate_nan)))


def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:  # noqa: A002
    """``x`` limited to the range ``[min, max]`` elementwise."""
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def sigmoid(x: Any) -> tensor:
    """The logistic function ``1 / (1 + exp(-x))`` elementwise."""
    t = S.to_tensor(x)
    return 1.0 / (1.0 + exp(-t))


def isnan(x: Any) -> tensor:
    """Elementwise NaN test, an int1 tile."""
    return S.emit(Op.ISNAN, [S.to_tensor(x)])


def cdiv(x: Any, div: Any) -> Any:
    """Division rounded up, ``(x + (div - 1)) // div`` (Triton's grouping, which fixes the
    types): how many blocks of ``div`` cover ``x``."""
    return (x + (div - 1)) // div


def _hint(kind: str, x: tensor, values: Any) -> tensor:
    values = S.unwrap(values)
    vals = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    hinted = S.emit(Op.HINT, [x], A.Hint(kind, tuple(int(S.unwrap(v)) for v in vals)))
    # Triton attaches the hint to x itself, so it holds even when the result is dropped (its
    # grouped GEMM tutorial calls `tl.multiple_of(a_ptrs, [16, 16])` as a statement): x takes
    # the hinted value wherever that stays in scope (x defined in the block being traced).
    block = S.current().block
    if x.handle in block.args or any(x.handle in i.results for i in block.instrs):
        x.handle = hinted.handle
    return hinted


def multiple_of(x: tensor, values: Any) -> tensor:
    """Return ``x``, promising the compiler each of its elements is a multiple of ``values``."""
    return _hint("multiple_of", x, values)


def max_contiguous(x: tensor, values: Any) -> tensor:
    """Return ``x``, promising it is made of runs of ``values`` consecutive integers."""
    return _hint("max_contiguous", x, values)


def max_constancy(x: tensor, values: Any) -> tensor:
    """Return ``x``, promising it is made of runs of ``values`` equal elements (unused by tiles)."""
    return x


def static_assert(cond: Any, msg: str = "") -> None:
    """Stop compilation with ``msg`` unless the compile-time condition ``cond`` holds."""
    cond = S.unwrap(cond)
    if isinstance(cond, tensor):
        raise S.error("tl.static_assert needs a compile-time condition")
    if not cond:
        raise CompileTimeAssertionFailure(f"static_assert failed: {msg}" if msg else "static_assert failed",
                                          user_loc())


def static_print(*values: Any, sep: str = " ", end: str = "\n") -> None:
    """Print compile-time values while the kernel is compiled (once per specialization)."""
    print(*values, sep=sep, end=end)


def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    """In debug mode, fail the launch with ``msg`` where the run-time ``cond`` is false."""
    c = S.truth(cond)
    if mask is not None:
        c = S.bitwise("or", c, S.invert(S.cast(mask, D.int1)))
    current().emit(Op.DEVICE_ASSERT, [c.handle], A.Message(str(msg)))


def device_print(prefix: str, *args: Any, hex: bool = False) -> None:  # noqa: A002
    """Print ``prefix`` and the run-time values of ``args`` from every program."""
    values = [S.to_tensor(a).handle for a in args]
    current().emit(Op.DEVICE_PRINT, values, A.Message(str(prefix), hex))


def debug_barrier() -> None:
    """Wait until every thread of the program reaches this point (a block-wide barrier)."""
    current().emit(Op.BARRIER, [])


# Triton core names kernels use beyond the ones above --------------------------

TRITON_MAX_TENSOR_NUMEL = 1048576


class const:  # noqa: N801
    """Annotation marking a pointer to read-only data; tiles accepts it and checks nothing."""


def add(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """``x + y``; integer overflow wraps (there is no overflow sanitizer)."""
    return S.add(x, y)


def sub(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """``x - y``; integer overflow wraps."""
    return S.sub(x, y)


def mul(x: Any, y: Any, sanitize_overflow: Any = True) -> tensor:
    """``x * y``; integer overflow wraps."""
    return S.mul(x, y)


def assume(cond: Any) -> None:
    """Promise that ``cond`` holds; checked as a device assertion in debug mode."""
    c = S.unwrap(cond)
    if not isinstance(c, tensor):
        if not c:
            raise S.error("tl.assume was given a condition that is false at compile time")
        return
    device_assert(c, "tl.assume condition does not hold")


def expect_zero(x: Any, mask: Any) -> Any:
    """Triton marks values expected to underflow to zero; outside its FP sanitizer that is ``x``."""
    return S.unwrap(x)


def condition(cond: Any, disable_licm: Any = False) -> Any:
    """``while tl.condition(c, ...)``: the loop condition ``c``; ``disable_licm`` does not change results."""
    return cond


def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1) -> Any:
    """Apply ``scalar_fn`` to the broadcast ``args``; tiles ops are elementwise, so the tiles go in whole."""
    tiles = [S.to_tensor(a) for a in args]
    shape: tuple[int, ...] = ()
    for t in tiles:
        shape = S.broadcast_shapes(shape, t.shape)
    return scalar_fn(*[S.broadcast_to(t, shape) for t in tiles])


def _unwrap_if_constexpr(o: Any) -> Any:
    return S.unwrap(o)


_constexpr_to_value = _unwrap_if_constexpr

CONSTEXPR_0 = constexpr(0)  # Triton's name (LightLLM: ``def kernel(..., ZERO=tl.core.CONSTEXPR_0)``)


def _tensor_member_fn(fn: Any) -> Any:
    """Decorator: make ``fn`` callable as ``x.fn(...)`` too, as Triton's standard library does."""
    METHODS[fn.__name__] = fn
    return fn


def builtin(fn: Any) -> Any:
    """Triton's ``@tl.core.builtin``: a Python function that kernels call as a language builtin.
    Triton hands it ``_semantic`` (its IR builder); tiles traces kernels as Python, so the function
    runs as written, with ``_semantic=None``.  Outside a kernel it refuses, as Triton's does."""
    from ..core.builder import is_tracing

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not is_tracing() and kwargs.get("_semantic") is None:
            raise ValueError(f"{fn.__name__} is a builtin: call it from a @triton.jit function. Did you forget "
                             "to add @triton.jit ? (`_semantic` argument must be provided outside of JIT functions.)")
        return fn(*args, **kwargs)

    call.__triton_builtin__ = True  # type: ignore[attr-defined]
    return call


def is_builtin(fn: Any) -> bool:
    return bool(getattr(fn, "__triton_builtin__", False))


# Triton's ``triton.language.core`` holds nearly every ``tl`` name (and ``core.get_int_dtype``);
# tiles spreads them over several modules.  The package, which imports them all, lists here the
# namespaces (dicts of names) a missing ``tl.core`` name is looked up in.
FALLBACK_NAMESPACES: list[dict[str, Any]] = []


def __getattr__(name: str) -> Any:
    for names in FALLBACK_NAMESPACES:
        if name in names:
            return names[name]
    raise AttributeError(f"module 'tiles.language.core' has no attribute {name!r}")
