"""``import tiles.language as tl``: Triton's tile language.

The module layout follows Triton 3.x: ``tl.core`` (types, constexpr, the
builtins), ``tl.standard`` (functions written on top of them, private helpers
such as ``_log2`` included), ``tl.random`` and ``tl.math``.  Names tiles does
not implement exist and raise a ``CompilationError`` saying why when a kernel
uses them (``unsupported.py``).
"""


from ..core.dtypes import (
    DType as dtype,
    PointerType as pointer_type,
    bfloat16, float8e4b8, float8e4b15, float8e4nv, float8e5, float8e5b16, float16, float32, float64,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
)
from ..core.ir import TileType as block_type
from . import _methods, core, extra, math, random, standard  # noqa: F401  (_methods: x.sum() and the like)
from .constexpr import constexpr
from .control import range, static_range
from .core import (
    TRITON_MAX_TENSOR_NUMEL, PropagateNan, abs, add, arange, assume, broadcast, broadcast_to, cast,
    cat, cdiv, ceil, clamp, condition, const, constexpr_type, cos, debug_barrier, device_assert,
    device_print, div_rn, erf, exp, exp2, expand_dims, expect_zero, fdiv, floor, fma, full,
    full_like, isnan, join, log, log2, map_elementwise, max_constancy, max_contiguous, maximum,
    minimum, mul, multiple_of, num_programs, permute, program_id, ravel, reshape, rsqrt, sigmoid,
    sin, split, sqrt, sqrt_rn, static_assert, static_print, sub, to_tensor, trans, umulhi, view,
    where, zeros, zeros_like,
)
from .memory import (
    advance, atomic_add, atomic_and, atomic_cas, atomic_load, atomic_max, atomic_min, atomic_or, atomic_poll,
    atomic_store, atomic_xchg, atomic_xor, block_ptr, load, load_tensor_descriptor, make_block_ptr,
    make_tensor_descriptor, store, store_tensor_descriptor, tensor_descriptor,
)
from .random import (
    pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x, randn, randn4x,
    uint_to_uniform_float,
)
from .reduction import (
    argmax, argmin, associative_scan, cumprod, cumsum, dot, gather, histogram, max, min, reduce,
    softmax, sort, sum, xor_sum,
)
from .aggregate import aggregate as _aggregate
from .aggregate import aggregate_replace
from .dot_scaled import dot_scaled
from .standard import bitonic_merge, flip, interleave, reduce_or, squeeze, swizzle2d, topk, unsqueeze
from .tensor import tensor
from .type_names import str_to_ty, tensor_descriptor_type, tuple_type
from .unsupported import placeholders as _placeholders

float8e4m3fn = float8e4nv
float8e5m2 = float8e5
pi32_t = pointer_type(int32)
tuple = tuple  # noqa: A001, PLW0127  (tl.tuple: kernels' tuples are Python tuples)

globals().update(_placeholders())
# tl.core.<any tl name>, as in Triton, and its ``tl.core._aggregate`` (``triton.aggregate``)
core.FALLBACK_NAMESPACES.extend([globals(), vars(standard), {"_aggregate": _aggregate}])

__all__ = [name for name in dir() if not name.startswith("_")]
