"""Checked mode on compiled backends, host side: instrument at compile time, supply the hidden
arguments at launch, read the error record afterwards and raise ``KernelRuntimeError``.

The IR pass is ``core/checked.py``; ``jit.py`` calls ``instrument_for`` on the traced kernel
and ``make_launcher`` instead of ``Backend.make_launcher``.  Both do nothing unless the
kernel was compiled with ``debug`` for a backend other than the interpreter (which checks
every access itself).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import config
from ..backends.base import Backend, CompiledKernel, LaunchPlan, Options, PlannedArg
from ..core.checked import RECORD_SLOTS, CheckPlan, Site, instrument
from ..core.errors import KernelRuntimeError, LaunchError
from ..core.ir import Kernel
from ..core.verify import verify

Launcher = Callable[..., None]
_PLANS: weakref.WeakKeyDictionary[Kernel, CheckPlan] = weakref.WeakKeyDictionary()


def enabled(backend: Backend, options: Options) -> bool:
    return options.debug and backend.name not in ("interpreter", "step")  # those check every access


def instrument_for(kernel: Kernel, backend: Backend, options: Options) -> Kernel:
    """The kernel with bounds checks when checked mode applies; otherwise ``kernel`` itself."""
    if not enabled(backend, options):
        return kernel
    kernel, plan = instrument(kernel)
    if config.check_ir():
        verify(kernel)
    _PLANS[kernel] = plan
    return kernel


def plan_of(compiled: CompiledKernel) -> CheckPlan | None:
    return _PLANS.get(compiled.ir)


def remember_plan(kernel: Kernel, plan: CheckPlan) -> None:
    """Attach ``plan`` to an instrumented kernel read back from the disk cache."""
    _PLANS[kernel] = plan


def byte_span(value: Any) -> tuple[int, int]:
    """(lowest byte, one past the highest byte) of an array argument's own elements, relative
    to its data pointer (negative strides make the first one negative)."""
    if callable(getattr(value, "data_ptr", None)) and callable(getattr(value, "stride", None)):
        itemsize = int(value.element_size())  # torch
        shape, strides = tuple(value.shape), tuple(s * itemsize for s in value.stride())
    elif isinstance(value, np.ndarray):
        shape, strides, itemsize = value.shape, value.strides, value.itemsize
    elif hasattr(value, "__cuda_array_interface__"):
        cai = value.__cuda_array_interface__
        itemsize = np.dtype(cai["typestr"]).itemsize
        shape = tuple(cai["shape"])
        strides = tuple(cai.get("strides") or _c_strides(shape, itemsize))
    elif hasattr(value, "shape") and hasattr(value, "strides") and hasattr(value, "dtype"):
        shape, strides, itemsize = tuple(value.shape), tuple(value.strides), value.dtype.itemsize
    else:
        try:
            arr = np.asarray(value)
        except Exception as e:
            raise LaunchError(f"checked mode (TILES_DEBUG=1 / debug=True) cannot tell the memory "
                              f"extent of a {type(value).__name__}: pass a NumPy array, a torch "
                              f"tensor or an object with shape, strides and dtype") from e
        shape, strides, itemsize = arr.shape, arr.strides, arr.itemsize
    if math.prod(shape) == 0:
        return 0, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return int(lo), int(hi) + int(itemsize)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _new_record(values: Sequence[Any], pointer_slots: Sequence[int]) -> Any:
    """A zeroed int64 record where the kernel's arrays live (device memory for CUDA tensors)."""
    for i in pointer_slots:
        v = values[i]
        if getattr(v, "is_cuda", False) is True:
            import torch
            return torch.zeros(RECORD_SLOTS, dtype=torch.int64, device=v.device)
    return np.zeros(RECORD_SLOTS, np.int64)


def _host(record: Any) -> np.ndarray:
    if isinstance(record, np.ndarray):
        return record
    return np.asarray(record.cpu().numpy())


def make_launcher(backend: Backend, compiled: CompiledKernel, plan: LaunchPlan,
                  with_streams: Callable[[Launcher], Launcher]) -> Launcher:
    """``backend.make_launcher`` for ``compiled``; for a checked kernel, one that appends the
    extents and the error record to the arguments and raises on a recorded error.
    ``with_streams`` makes a backend launcher take ``stream=``."""
    check = plan_of(compiled)
    if check is None:
        return backend.make_launcher(compiled, plan)
    slot_of = {p.name: p.position for p in plan}
    pointer_slots = [slot_of[n] for n in check.pointer_params]
    hidden_names = [f"checked_{b}_{n}" for n in check.pointer_params for b in ("lo", "hi")]
    hidden = len(hidden_names) + 1
    extended = [*plan, *(PlannedArg(j - hidden, n, False, False) for j, n in enumerate(hidden_names)),
                PlannedArg(-1, "checked_record", True, True)]
    inner = with_streams(backend.make_launcher(compiled, extended))

    def launcher(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
        spans = [byte_span(values[i]) for i in pointer_slots]
        record = _new_record(values, pointer_slots)
        inner(grid, [*values, *(b for span in spans for b in span), record], stream=stream)
        found = _host(record)
        if found[1]:
            raise _error(compiled.name, check, found, dict(zip(check.pointer_params, spans)),
                         {n: values[i] for n, i in zip(check.pointer_params, pointer_slots)})
    return launcher


def _describe(name: str, value: Any, span: tuple[int, int]) -> str:
    shape = "x".join(map(str, getattr(value, "shape", ()))) or "scalar"
    dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
    return f"argument '{name}' ({shape} {dtype} array; valid byte offsets [{span[0]}, {span[1]}))"


def _error(kernel: str, check: CheckPlan, record: np.ndarray, spans: dict[str, tuple[int, int]],
           values: dict[str, Any]) -> KernelRuntimeError:
    count, site_no, x, y, z, offset = (int(v) for v in record[:6])
    site: Site = check.sites[site_no - 1]
    where = f"in kernel '{kernel}', program ({x}, {y}, {z})"
    if site.kind == "device_assert":
        return KernelRuntimeError(f"device_assert failed {where}: {site.message}", site.loc)
    arg = site.origins[0]
    lo, hi = spans[arg]
    if lo <= offset and offset + site.size <= hi:
        problem = f"of {_describe(arg, values[arg], spans[arg])} is not a multiple of the access size {site.size}"
    else:
        problem = (f"(an access of {site.size} bytes) is out of bounds of "
                   f"{_describe(arg, values[arg], spans[arg])}")
    text = f"{site.kind} {where}: byte offset {offset} {problem}"
    if len(site.origins) > 1:
        text += f" (the pointer may derive from {', '.join(site.origins)}: it fits none of them)"
    more = "" if count <= 1 else f"; {count} bad lanes in all"
    text += f"{more} (checked mode: the bad accesses were skipped)"
    return KernelRuntimeError(text, site.loc)
