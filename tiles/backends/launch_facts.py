"""What one launch key says about each kernel parameter, for a backend's native hot launch.

The jit (``runtime/hot_path.py``) turns a launch key's facts into one ``Expected`` per parameter;
a backend that can check them natively (``backends/cuda/hot_launch.py``) builds a builtin that
launches while every argument still matches and otherwise hands the call to the jit's own
launch function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# kinds of parameter
TENSOR, INT, FLOAT, NONE, CONSTANT = 1, 2, 3, 4, 5
# an INT's class (``Expected.expect``): in int32 range is 1 / a multiple of 16 / other, or any value
# in it (do_not_specialize); outside int32 but in int64 a multiple of 16 / other, or any value
I32_ONE, I32_DIV16, I32_OTHER, I32_ANY, I64_DIV16, I64_OTHER, I64_ANY = range(7)
# a TENSOR's address: any, a multiple of 16, not a multiple of 16
ANY_ALIGNMENT, ALIGNED, UNALIGNED = 0, 1, 2
MISSING_DEFAULT = object()  # the default of a parameter that has none


@dataclass(frozen=True)
class Expected:
    """One parameter's facts: ``kind``; a TENSOR's exact ``type``, ``dtype`` (``obj``, compared by
    identity), device index (``expect``) and ``alignment``; an INT's class (``expect``); a
    CONSTANT's value (``obj``: the same object, or an equal int/float/str of the same type)."""

    kind: int
    type: Any = None
    obj: Any = None
    expect: int = 0
    alignment: int = ANY_ALIGNMENT
