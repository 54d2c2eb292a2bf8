"""The curated corpus: one module per op family, each with ``cases(profile) -> list[Case]``."""

from __future__ import annotations

from ..case import Case
from ..profiles import Profile
from . import (
    atomics,
    casts,
    classic,
    control,
    dot,
    elementwise,
    guards,
    integer,
    libdevice,
    math_fns,
    memory,
    random_,
    reductions,
    shapes,
    sweeps,
    sync,
)

MODULES = (classic, guards, elementwise, integer, casts, math_fns, libdevice, reductions, shapes, memory, atomics, sync,
           dot, control, random_, sweeps)


def all_cases(profile: Profile) -> list[Case]:
    out: list[Case] = []
    for module in MODULES:
        out.extend(module.cases(profile))
    return out
