"""Launching kernels that copy descriptor tiles with TMA: the tensor maps as a hidden argument.

A kernel compiled with TMA (``compiled.tensor_maps``, from the lowering) takes one more
parameter after the user's: the device address of its encoded ``CUtensorMap``s.  The launcher
built here reads each map's base address, sizes and strides from the launch's values, encodes
the maps once per distinct set (``tensor_map.py``) and calls the plain launcher with the address
appended.  When a launch's tensors break TMA's rules (host arrays, a base not 16-byte aligned, a
stride that is not a positive multiple of 16 bytes...), it uses the same kernel compiled without
TMA instead, built on first need.  A launch with tensors not seen before copies their maps to
the device and waits for the copy (``cuStreamSynchronize``): under CUDA graph capture, launch
once with the same tensors before capturing.  A kernel whose programs are persistent
(``compiled.persistent``, ``hopper/persistent.py``) takes the launch's grid as
three more int32 parameters and is launched with at most one program per SM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..base import CompiledKernel, LaunchArg, LaunchPlan, PlannedArg
from . import runtime
from .hopper.persistent import GRID_PARAMS
from .hopper.tma_claim import HIDDEN_PARAM
from .hopper.tma_spec import MapSpec
from .tensor_map import MapTable, encode, encode_arguments

Launcher = Callable[..., None]
Plan = LaunchPlan
_TABLE = MapTable()


def tensor_maps(compiled: CompiledKernel) -> list[MapSpec]:
    return [MapSpec.from_json(d) for d in compiled.tensor_maps]


def with_tensor_maps(compiled: CompiledKernel, plan: Plan, make: Callable[[CompiledKernel, Plan], Launcher],
                     compile_without_tma: Callable[[], CompiledKernel]) -> Launcher:
    """A launcher for ``compiled`` (which has tensor maps): ``make(kernel, plan)`` builds the plain
    launchers, of ``compiled`` with the maps' address appended to the plan and values, and of
    ``compile_without_tma()`` for launches TMA cannot serve."""
    specs = tensor_maps(compiled)
    persistent = compiled.persistent
    hidden = [HIDDEN_PARAM, *(GRID_PARAMS if persistent else ())]
    with_maps = make(compiled, [*plan, *(PlannedArg(i - len(hidden), name, False, False)
                                         for i, name in enumerate(hidden))])
    fallback: list[Launcher] = []
    lock = threading.Lock()
    known: dict[tuple[Any, ...], int] = {}

    def plain(grid: tuple[int, int, int], values: Sequence[Any], stream: Any) -> None:
        if not fallback:
            with lock:
                if not fallback:
                    fallback.append(make(compile_without_tma(), plan))
        fallback[0](grid, values, stream)

    def launcher(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
        by_param = [values[i] for i, *_ in plan]
        places = [runtime.device_address(LaunchArg(plan[s.base][1], by_param[s.base], True))
                  for s in specs]
        key = tuple((None if p is None else p[0], *(x.of(by_param) for x in (*s.shape, *s.strides, *s.multiples)))
                    for s, p in zip(specs, places))
        address = known.get(key)
        if address is None:
            address = known[key] = _encode_all(specs, by_param, places, stream) or 0
        if not address:
            return plain(grid, values, stream)
        if not persistent:
            return with_maps(grid, [*values, address], stream)
        programs = grid[0] * grid[1] * grid[2]
        place = places[0]
        if programs <= 0 or place is None:
            return None
        launched = min(programs, runtime.multiprocessor_count(place[1]))
        if programs + launched >= 2**31:  # the programs' int32 counter would wrap
            return plain(grid, values, stream)
        return with_maps((launched, 1, 1), [*values, address, *grid], stream)
    return launcher


def _encode_all(specs: list[MapSpec], by_param: Sequence[Any], places: Sequence[Any], stream: Any) -> int | None:
    """The device address of the encoded maps, or None when one of them cannot be encoded."""
    if any(p is None for p in places):
        return None
    device, context = places[0][1], places[0][2] or runtime.primary_context(places[0][1])
    drv = runtime.driver()
    if not hasattr(drv.lib, "cuTensorMapEncodeTiled"):
        return None
    pushed = runtime.make_current(context)
    try:
        maps = b""
        for spec, place in zip(specs, places):
            args = encode_arguments(spec, by_param, place[0])
            encoded = None if args is None else encode(drv.lib, args)
            if encoded is None:
                return None
            maps += encoded
        return _TABLE.device_copy(drv, context, maps, runtime.stream_handle(stream, device))
    finally:
        if pushed:
            drv.pop()
