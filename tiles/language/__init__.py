"""``import tiles.language as tl``: Triton's tile language."""

from ..core.dtypes import (
    DType as dtype,
    PointerType as pointer_type,
    bfloat16, float8e4nv, float8e5, float16, float32, float64,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
)
from . import extra, math, random  # noqa: F401
from .control import range, static_range
from .core import (
    PropagateNan, abs, arange, broadcast, broadcast_to, cast, cat, cdiv, ceil, clamp, constexpr,
    cos, debug_barrier, device_assert, device_print, div_rn, dot, erf, exp, exp2, expand_dims, fdiv,
    floor, fma, full, full_like, isnan, join, log, log2, max_constancy, max_contiguous, maximum,
    minimum, multiple_of, num_programs, permute, program_id, ravel, reshape, rsqrt, sigmoid, sin,
    split, sqrt, sqrt_rn, static_assert, static_print, to_tensor, trans, umulhi, view, where,
    zeros, zeros_like,
)
from .memory import (
    advance, atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg,
    atomic_xor, block_ptr, load, make_block_ptr, make_tensor_descriptor, store, tensor_descriptor,
)
from .random import pair_uniform_to_normal, rand, rand4x, randint, randint4x, randn, randn4x
from .reduction import (
    argmax, argmin, associative_scan, cumprod, cumsum, gather, histogram, max, min, reduce,
    softmax, sort, sum, xor_sum,
)
from .tensor import tensor

float8e4m3fn = float8e4nv
float8e5m2 = float8e5
pi32_t = pointer_type

__all__ = [name for name in dir() if not name.startswith("_")]
