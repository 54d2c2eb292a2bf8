"""Per-kernel generated code for the steady-state launch: binding and the specialization key.

``make_launch`` writes, once per kernel, a *launch function* with the kernel's own parameters
plus the launch options (``launch_facts.LAUNCH_OPTIONS``: ``warmup``, ``num_warps``,
``num_stages``, ``debug``, ``stream``, ``backend``) as keywords; ``kernel[grid]`` binds the grid
to it as a method binds ``self``, so Python itself binds positional and keyword arguments and
fills defaults, with no ``functools.partial`` and no second binding.  For every run-time parameter it computes a small
*fact* inline for the common types: a torch tensor gives its dtype (``(dtype, Alignment.UNALIGNED)``
when its ``data_ptr()`` is not 16-aligned) and its device index, an int in int32 range its
``IntClass`` ("is 1" / "multiple of 16" / "other", or any for ``do_not_specialize``), a float
``specialize.FLOAT_FACT``; any other value gets ``specialize.fact_of`` (the words of all of them:
``backends/launch_facts.py``).
Constexpr parameters contribute their value.  Equal facts imply equal specializations
(``specialize.classify``), so the facts, with the backend and the options, key the jit's launch
cache; the key is one flat tuple (each run-time parameter has two slots: the fact and a tensor's
device, None for other values; a constexpr one).

A hit whose ``FastLaunch`` has a *direct* form (the CUDA launcher for torch tensors:
``backends/cuda/launch/direct_launch.py``) calls ``direct(stream, grid, *values)`` with each tensor given
as the ``data_ptr()`` read for its fact: 0 means launched, ``DECLINED`` that the launcher's own path
should run (another thread's context, an unusual grid or stream, a value the native conversion
refuses), anything else a failure for ``FastLaunch.failed`` to report.  Otherwise the launcher is
called with the grid and the values.

After a direct launch (or a grid function's launch) with the default options and a stream that is
None or an int, the launch function asks the ``install`` hook for the key's native *hot launch*
(``runtime/hot_path.py``, ``backends/cuda/launch/hot_launch.py``), which ``kernel[grid]`` then binds
instead of this function: it checks the same facts in native code and, whenever one differs,
hands the call with the same arguments on (to another key's hot launch, in the end to this
function).  So this function runs for the first launches of a key, for launches no hot launch
serves, and where no hot launch can be built.

Anything else goes to the jit's general path, which reports errors with the kernel's file:line:
a missing argument (parameters without a default get a sentinel default), extra positional
arguments or unknown keywords (collected), ``warmup=True``, an unhashable constexpr, a miss.
(An argument given both by position and by keyword is Python's own TypeError, which names the
kernel and the argument.)

``make_binder`` writes the facts alone (``bind(*args, **kwargs) -> (facts, values)``, one tuple of
slots per parameter): the same fact code, for tests of the facts' meaning.
"""

from __future__ import annotations

import inspect
import keyword
import sys
from collections.abc import Callable
from typing import Any

from ..backends.launch_facts import DECLINED, LAUNCH_OPTIONS, Alignment, IntClass, ParamKind
from .specialize import FLOAT_FACT, fact_of

Binder = Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]
LaunchFunction = Callable[..., Any]
_PREFIX = "_tiles_"


class _NoTensor:
    """Stands for torch.Tensor before torch is imported (no value has this type)."""


def tensor_type() -> type:
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    return tensor if isinstance(tensor, type) else _NoTensor


def can_bind(signature: inspect.Signature) -> bool:
    """Whether ``make_binder`` can write a binder for this signature."""
    for name, param in signature.parameters.items():
        if param.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            return False
        if name.startswith(_PREFIX) or keyword.iskeyword(name) or not name.isidentifier():
            return False
    return True


def _fact_lines(name: str, slot: str, kind: str, address: str) -> list[str]:
    """Code that sets the argument's fact slots (``_slots``) and ``address`` to what a direct
    launch takes for it: a tensor's ``data_ptr()`` (read once, for the fact too), else the value."""
    if kind == ParamKind.CONSTEXPR:
        return [f"    {slot} = {name}"]
    # a tensor's fact: its dtype, or (dtype, UNALIGNED) when specialized and not 16-aligned
    specialized = kind == ParamKind.SPECIALIZED
    dtype = (f"{name}.dtype if not {address} & 15 else ({name}.dtype, {int(Alignment.UNALIGNED)})" if specialized
             else f"{name}.dtype")
    # an int in int32 range: its IntClass (as specialize.fact_of gives it)
    integer = (f"{int(IntClass.I32_ONE)} if {name} == 1 else {int(IntClass.I32_DIV16)} if not {name} & 15 else "
               f"{int(IntClass.I32_OTHER)}" if specialized else str(int(IntClass.I32_ANY)))
    other = f"; {slot}d = None; {address} = {name}"
    return [f"    {_PREFIX}t = type({name})",
            f"    if {_PREFIX}t is {_PREFIX}tensor: {address} = {name}.data_ptr(); {slot} = {dtype}; "
            f"{slot}d = {name}.get_device()",
            f"    elif {_PREFIX}t is {_PREFIX}int and -0x80000000 <= {name} <= 0x7fffffff: {slot} = {integer}{other}",
            f"    elif {_PREFIX}t is {_PREFIX}float: {slot} = {FLOAT_FACT!r}{other}",
            f"    else: {slot} = {_PREFIX}fact({name}, {str(kind)!r}); {slot}d = None; "
            f"{address} = {_PREFIX}address({name})"]


def _slots(slot: str, kind: str) -> list[str]:
    """The key's slots for one parameter: a constexpr's value; else the fact and a tensor's device
    (None for other values).  Every parameter has a fixed number of slots, so keys are flat."""
    return [slot] if kind == ParamKind.CONSTEXPR else [slot, slot + "d"]


def _address_of(value: Any) -> Any:
    """What a direct launch takes for a value the binder's inline cases do not cover."""
    tensor: Any = value
    return tensor.data_ptr() if isinstance(value, tensor_type()) else value


def make_binder(signature: inspect.Signature, kinds: tuple[str, ...]) -> Binder:
    """The binder for a kernel with ``signature``; ``kinds``: each parameter's ``ParamKind``.
    Call ``can_bind`` first."""
    names = list(signature.parameters)
    namespace: dict[str, Any] = {f"{_PREFIX}tensor": tensor_type(), f"{_PREFIX}int": int,
                                 f"{_PREFIX}float": float, f"{_PREFIX}fact": fact_of,
                                 f"{_PREFIX}address": _address_of}
    params = []
    for name, param in signature.parameters.items():
        if param.default is inspect.Parameter.empty:
            params.append(name)
        else:
            namespace[f"{_PREFIX}default_{name}"] = param.default
            params.append(f"{name}={_PREFIX}default_{name}")
    lines = [f"def bind({', '.join(params)}):"]
    slots = [f"{_PREFIX}k{i}" for i in range(len(names))]
    for i, (name, slot, kind) in enumerate(zip(names, slots, kinds)):  # the launch function's fact code
        lines += _fact_lines(name, slot, kind, f"{_PREFIX}a{i}")
    facts = "".join(f"({', '.join(_slots(slot, kind))}), " for slot, kind in zip(slots, kinds))
    lines.append(f"    return ({facts}), ({''.join(n + ', ' for n in names)})")
    exec("\n".join(lines), namespace)  # noqa: S102 - the text is built from the kernel's parameter names
    binder: Binder = namespace["bind"]
    return binder


class _Missing:
    """The default of a parameter that has none: the general path then says it is missing."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def make_launch(name: str, signature: inspect.Signature, kinds: tuple[str, ...],
                hooks: dict[str, Any]) -> LaunchFunction:
    """``launch(grid, *args, **kwargs)`` for a kernel called ``name`` (see the module docstring;
    ``kernel[grid]`` binds ``grid`` as a method binds ``self``).  ``hooks``: ``launches`` (the
    jit's dict of ``FastLaunch`` by key), ``registry`` (asked for the default backend on every
    launch), ``quick_grid``, ``max_grid``, ``launch(compiled, launcher, grid, values, num_warps,
    num_stages, stream)``, ``slow(grid, values, extra, hints, warmup, num_warps, num_stages,
    debug, stream, backend, key)``, ``install(entry, key, backend)`` (the hot launch), ``guards``
    (a list: while not empty, each hit first calls ``check_globals()``).  Call ``can_bind`` first."""
    names = list(signature.parameters)
    namespace: dict[str, Any] = {f"{_PREFIX}tensor": tensor_type(), f"{_PREFIX}int": int,
                                 f"{_PREFIX}float": float, f"{_PREFIX}fact": fact_of, f"{_PREFIX}M": MISSING,
                                 f"{_PREFIX}address": _address_of,
                                 **{f"{_PREFIX}{k}": v for k, v in hooks.items()}}
    params, required = [], []
    for pname, param in signature.parameters.items():
        default = param.default
        if default is inspect.Parameter.empty:
            default = MISSING
            required.append(pname)
        namespace[f"{_PREFIX}default_{pname}"] = default
        params.append(f"{pname}={_PREFIX}default_{pname}, ")
    options = ", ".join(f"{o}={'False' if o == 'warmup' else 'None'}" for o in LAUNCH_OPTIONS)
    values = "(" + "".join(n + ", " for n in names) + ")"
    slot_names = [f"{_PREFIX}k{i}" for i in range(len(names))]
    slots = "".join(f"{s}, " for slot, kind in zip(slot_names, kinds) for s in _slots(slot, kind))
    g, launch_grid, key, entry, direct, status = (f"{_PREFIX}{n}" for n in (
        "grid", "launch_grid", "key", "entry", "direct", "status"))
    slow = f"{_PREFIX}slow({g}, {values}, {_PREFIX}extra, {_PREFIX}hints, {', '.join(LAUNCH_OPTIONS)}, {{key}})"
    missing = "".join(f" or {n} is {_PREFIX}M" for n in required)
    function = name if name.isidentifier() and not keyword.iskeyword(name) else "kernel"
    # a launch the key's hot launch (runtime/hot_path.py) serves: default options, stream None or an int
    servable = (f"{entry}.hot is not False and {_PREFIX}options is None and debug is None and "
                f"(stream is None or type(stream) is {_PREFIX}int)")
    lines = [
        f"def {function}({g}, {''.join(params)}*{_PREFIX}extra, {options}, **{_PREFIX}hints):",
        f"    if warmup or {_PREFIX}extra or {_PREFIX}hints{missing}:",
        f"        return {slow.format(key='None')}",
    ]
    addresses = [f"{_PREFIX}a{i}" if kind != ParamKind.CONSTEXPR else pname
                 for i, (pname, kind) in enumerate(zip(names, kinds))]
    for pname, slot, kind, address in zip(names, slot_names, kinds, addresses):
        lines += _fact_lines(pname, slot, kind, address)
    direct_args = "".join(", " + a for a in addresses)
    lines += [
        f"    {_PREFIX}options = None if num_warps is None and num_stages is None else "
        "(num_warps, num_stages, type(num_warps), type(num_stages))",
        f"    {key} = ({_PREFIX}registry.default() if backend is None else backend, {_PREFIX}options, debug, "
        f"{slots})",
        "    try:",
        f"        {entry} = {_PREFIX}launches[{key}]",
        "    except KeyError:",
        f"        {entry} = None",
        "    except TypeError:  # an unhashable constexpr",
        f"        {entry} = {key} = None",
        f"    if {entry} is None or ({entry}.target is not None and "
        f"{entry}.backend.target_key() != {entry}.target):",
        f"        return {slow.format(key=key)}",
        f"    if {_PREFIX}guards:  # module globals the code baked in (runtime/global_guards.py)",
        f"        {_PREFIX}check_globals()",
        f"    {direct} = {entry}.direct",
        f"    if {direct} is not None:",
        f"        {status} = {direct}(stream, {g}{direct_args})",
        f"        if not {status}:",
        f"            if {servable}:  # the hot launch declined: install or rebuild it",
        f"                {_PREFIX}install({entry}, {key}, backend)",
        f"            return {entry}.compiled",
        f"        if {status} != {DECLINED}:",
        f"            {entry}.failed({status}, {g})",
        f"    if type({g}) is tuple and len({g}) == 1 and type({g}[0]) is int and 0 < {g}[0] <= {_PREFIX}max_grid:",
        f"        {launch_grid} = ({g}[0], 1, 1)",
        "    else:",
        f"        {launch_grid} = {_PREFIX}quick_grid({g})",
        f"        if {launch_grid} is None:  # a function of the arguments, or not a valid grid",
        f"            if {direct} is not None and callable({g}) and {servable}:",
        f"                {_PREFIX}install({entry}, {key}, backend)",
        f"            return {_PREFIX}launch({entry}.compiled, {entry}.launcher, {g}, {values}, num_warps, "
        "num_stages, stream)",
        "    if stream is None:",
        f"        {entry}.launcher({launch_grid}, {values})",
        "    else:",
        f"        {entry}.launcher({launch_grid}, {values}, stream=stream)",
        f"    return {entry}.compiled",
    ]
    exec("\n".join(lines), namespace)  # noqa: S102 - the text is built from the kernel's parameter names
    launch: LaunchFunction = namespace[function]
    return launch
