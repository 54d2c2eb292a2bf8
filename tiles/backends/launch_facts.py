"""One vocabulary for what a launch says about each kernel parameter.

Every layer that classifies, keys or checks a launch's arguments speaks these words and no
other: the jit (``runtime/specialize.py``'s facts, ``runtime/binder.py``'s inline facts,
``runtime/hot_path.py``'s expectations) and a backend's native hot launch
(``backends/cuda/launch/hot_launch.py``, whose IR tests the same numbers).

- ``ParamKind``: how a parameter specializes (constexpr, specialized, ``do_not_specialize``).
- ``IntClass``: the class of an int argument.  The binder's inline fact of an int in int64 range,
  ``specialize.fact_of``'s, and the bit the native code tests are all this one number.
- ``Alignment``: what a tensor's address must be (any, a multiple of 16, not one).
- ``ArgKind``: what a parameter's argument is, for the native checks (``Expected.kind``).
- ``LAUNCH_OPTIONS``: the launch keywords ``kernel[grid](...)`` takes besides the kernel's
  parameters, in the order the launch function and the native hot launch bind them.

A backend that can check the facts natively builds a builtin that launches while every argument
still matches and otherwise hands the call to the jit's own launch function.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class ParamKind(enum.StrEnum):
    """How one kernel parameter specializes (a ``str``: the value is its one-letter code)."""

    CONSTEXPR = "c"        # tl.constexpr: its value keys the launch
    SPECIALIZED = "s"      # run-time, specialized on 1, multiples of 16 and 16-byte-aligned addresses
    NOT_SPECIALIZED = "n"  # run-time, in do_not_specialize: only the type keys the launch


class IntClass(enum.IntEnum):
    """An int argument's class: in int32 range is 1 / a multiple of 16 / other, or any value there
    (do_not_specialize); outside int32 but in int64 a multiple of 16 / other, or any value there.
    The native code tests bit ``IntClass`` of a mask of the classes a value is in."""

    I32_ONE = 0
    I32_DIV16 = 1
    I32_OTHER = 2
    I32_ANY = 3
    I64_DIV16 = 4
    I64_OTHER = 5
    I64_ANY = 6


def int_class(v: int, kind: str) -> IntClass | None:
    """The class of ``v`` (an ``int``) for a parameter of ``kind`` (specialized or not); None
    outside int64 (uint64 and beyond have no class)."""
    if -(2**31) <= v < 2**31:
        if kind == ParamKind.NOT_SPECIALIZED:
            return IntClass.I32_ANY
        return IntClass.I32_ONE if v == 1 else IntClass.I32_DIV16 if v % 16 == 0 else IntClass.I32_OTHER
    if -(2**63) <= v < 2**63:
        if kind == ParamKind.NOT_SPECIALIZED:
            return IntClass.I64_ANY
        return IntClass.I64_DIV16 if v % 16 == 0 else IntClass.I64_OTHER
    return None


class Alignment(enum.IntEnum):
    """What a tensor argument's address must be."""

    ANY = 0        # do_not_specialize: the address does not key the launch
    ALIGNED = 1    # a multiple of 16
    UNALIGNED = 2  # not a multiple of 16


class ArgKind(enum.IntEnum):
    """What one parameter's argument is, for a native check (``Expected.kind``)."""

    TENSOR = 1
    INT = 2
    FLOAT = 3
    NONE = 4
    CONSTANT = 5


# The launch keywords besides the kernel's parameters (runtime/jit.py's ``run``), in the order the
# launch function and the native hot launch bind them; a grid function's meta gets the defaults.
LAUNCH_OPTIONS = ("warmup", "num_warps", "num_stages", "debug", "stream", "backend")
DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES = 4, 3

# What a backend's direct launch returns when it did not launch and the launcher should (0:
# launched; anything else: a failure status for the launcher's ``failed``).
DECLINED = -1

MISSING_DEFAULT = object()  # the default of a parameter that has none


@dataclass(frozen=True)
class Expected:
    """One parameter's facts: ``kind``; a TENSOR's exact ``type``, ``dtype`` (``obj``, compared by
    identity), device index (``expect``) and ``alignment``; an INT's class (``expect``); a
    CONSTANT's value (``obj``: the same object, or an equal int/float/str of the same type)."""

    kind: ArgKind
    type: Any = None
    obj: Any = None
    expect: int = 0
    alignment: Alignment = Alignment.ANY
