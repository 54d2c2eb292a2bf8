"""A kernel's native inline cache: ``kernel[grid](...)`` checked and launched in one builtin.

The jit's launch function (``runtime/binder.py``) binds the arguments in Python, computes each
one's fact, builds the launch key and looks it up; that costs more than the driver call.  Once
a key has launched directly, the jit installs a *hot* builtin for it (``runtime/hot_path.py``):
``METH_FASTCALL | METH_KEYWORDS``, bound to the grid by ``kernel[grid]`` as the launch function
is, with a ``bytes`` of constants recording the facts of that one key
(in the words of ``backends/launch_facts.py``).  It

1. takes the grid: a tuple, or a callable (anything else: declined);
2. binds the call: positional arguments in order, keywords by comparing the call's keyword
   names with the interned parameter and option names (an unknown keyword, a name not
   interned, a parameter given twice or missing, too many positional arguments: declined),
   defaults from the constants;
3. checks the options: ``warmup`` absent or False, ``num_warps``/``num_stages``/``debug``
   absent or None, ``stream`` absent, None or an ``int``; ``backend`` is the one the key was
   made with (identity, or an equal ``str``), or absent/None while the registry is as it was
   (``registry.default_state``: its generation word, bumped by ``set_backend``, and the objects
   behind ``TILES_INTERPRET`` and ``TILES_BACKEND`` in the dict behind ``os.environ``, compared by
   identity, so any write to them is seen);
4. checks that each module global the kernel's code baked in (``runtime/global_guards.py``)
   is still the object it was compiled with (a dict lookup and an identity test each), then
   each parameter against its fact, in native code with the C API (first every type,
   int class and constexpr, then the tensors' accessors, so a decline costs little): a tensor's
   exact type, its ``dtype`` (identity; read through the type's data descriptor), ``get_device()`` and
   ``data_ptr()``'s alignment (16, not 16, or any) — both called as the functions found on the
   type, so an instance attribute of those names is not consulted; an int's exact type and
   class (is 1 / multiple of 16 / other within int32, multiple of 16 / other within int64
   outside int32, or any of a range for ``do_not_specialize``); a float's type; None; a
   constexpr's identity, or equality for an ``int``/``float``/``str`` of the same type;
5. evaluates a grid function with the jit's ``meta`` (the bound arguments, ``num_warps`` 4,
   ``num_stages`` 3; an exception from it propagates);
6. hands ``(stream, grid, *values)``, tensors as their addresses, to the kernel's direct launch
   (``direct_launch.py``'s function, compiled into the same module): 0 returns the compiled
   kernel, a failure status goes to the launcher's ``failed`` (which raises).

Anything declined — any check above, or the direct launch's own (driver generation, the thread's
current context, grid sizes) — calls the *next* callable with the very same arguments
(``PyObject_Vectorcall``; after a grid function ran, with its result in the grid's place, so it
runs once per launch): the launch function, which does all of it in Python as before, or another
key's hot launch (``link``: the jit chains a few, most recently used first, so alternating keys
stay native).  A decline has no other effect.  A *retired* hot launch (``retire``: its launch plan
was dropped) hands every call to its launch function.
The native code and the constants' layout: ``hot_launch_ir.py``.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from ...launch_facts import DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS, MISSING_DEFAULT, ArgKind, Expected
from . import direct_launch, hot_launch_ir
from .capi import LazyBuiltin, NativeBuiltin, check_object_layout
from .hot_launch_ir import GUARD, HEADER, OFFSETS, OPTIONS, RECORD

METH_FASTCALL_KEYWORDS = 0x0080 | 0x0002

enabled = True  # False: no hot builtins from now on (every launch takes the launch function)
_builtin = LazyBuiltin(lambda: NativeBuiltin(
    hot_launch_ir.ir(), (*direct_launch.PYTHON_SYMBOLS, *hot_launch_ir.PYTHON_SYMBOLS), "tiles_hot_launch",
    METH_FASTCALL_KEYWORDS,
    b"check one launch key's facts and launch (tiles.backends.cuda.launch.hot_launch)"), check_object_layout)


def unavailable_reason() -> str | None:
    """Why ``make`` returns None for every kernel (None when it does not)."""
    return _builtin.unavailable_reason()


RegistryState = tuple[Any, Any, tuple[Any, Any], tuple[Any, Any]]  # backends/registry.default_state()


def _nothing() -> None:
    """Stands for a tensor accessor in a kernel without tensors."""


GRID_META_DEFAULTS = (DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES)  # a grid function's meta["num_warps"], ["num_stages"]
_TP_DESCR_GET, _TP_DESCR_SET = 272, 280  # PyTypeObject's tp_descr_get/set on 64-bit CPython 3.8+


def _type_slot(t: type, offset: int) -> int:
    return ctypes.c_void_p.from_address(id(t) + offset).value or 0


def _descriptor_slots_found() -> bool:
    """Whether tp_descr_get/set are where ``_TP_DESCR_GET`` says (each type's own pattern)."""
    return all((_type_slot(t, _TP_DESCR_GET) != 0, _type_slot(t, _TP_DESCR_SET) != 0) == expected
               for t, expected in ((property, (True, True)), (staticmethod, (True, False)), (int, (False, False))))


def _accessors(tensor: type) -> tuple[Any, int, Any, Any] | None:
    """How the native code reads a ``tensor``'s dtype, address and device: the ``dtype`` data
    descriptor of its type and that descriptor type's ``tp_descr_get`` (None, 0: ``getattr`` by
    name), and the ``data_ptr``/``get_device`` functions found on its type (an instance
    attribute of those names is not consulted, as for special methods).  None: not plain methods."""
    def static(name: str) -> Any:
        for klass in tensor.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return None
    data_ptr, get_device = static("data_ptr"), static("get_device")
    methods = (types.MethodDescriptorType, types.FunctionType)
    if not (isinstance(data_ptr, methods) and isinstance(get_device, methods)):
        return None
    dtype = static("dtype")
    kind = type(dtype)
    if hasattr(kind, "__get__") and hasattr(kind, "__set__") and _descriptor_slots_found():
        return dtype, _type_slot(kind, _TP_DESCR_GET), data_ptr, get_device
    return None, 0, data_ptr, get_device


def make(direct: Callable[..., int], fallback: Callable[..., Any], compiled: Any,
         failed: Callable[[int, Any], None], names: Sequence[str], defaults: Sequence[Any],
         expected: Sequence[Expected], backend: Any, registry: RegistryState | None,
         guards: Sequence[tuple[dict[str, Any], str, Any]] = ()) -> Callable[..., Any] | None:
    """The hot builtin of one launch key (see the module docstring).  ``direct``: the key's native
    direct launch; ``fallback``: the launch function; ``defaults``: per parameter its default,
    ``MISSING_DEFAULT`` where it has none; ``backend``: the ``backend=`` the key was made with,
    or None with ``registry`` (``registry.default_state()`` when the key's backend was found);
    ``guards``: (namespace, name, value) of each module global the code baked in, which must still
    be that very object (else declined: the launch function says what changed).
    None where no builtin can be made."""
    native = _builtin.get() if enabled else None
    constants_of_direct = getattr(direct, "__self__", None)
    if native is None or type(constants_of_direct) is not bytes or (backend is None) != (registry is not None):
        return None
    tensor_types = {e.type for e in expected if e.kind == ArgKind.TENSOR}
    accessors = _accessors(tensor_types.pop()) if len(tensor_types) == 1 else (None, 0, _nothing, _nothing)
    if len(tensor_types) > 0 or accessors is None:
        return None
    dtype_descriptor, dtype_get, data_ptr, get_device = accessors
    interned = [sys.intern(n) for n in (*names, *OPTIONS)]
    dtype, num_warps, num_stages = sys.intern("dtype"), sys.intern("num_warps"), sys.intern("num_stages")
    next_cell = (ctypes.c_uint64 * 2)(id(fallback), 1)  # what a decline calls (``link``), and 0 once retired
    keep: list[Any] = [direct, fallback, next_cell, compiled, failed, interned, list(defaults), list(expected),
                       backend, dtype, dtype_descriptor, data_ptr, get_device, num_warps, num_stages,
                       GRID_META_DEFAULTS]
    if registry is None:
        state = (1, id(backend), 0, 0, 0, 0, 0, 0, 0)
    else:
        keep.append(registry)
        generation, environ, keys, values = registry
        state = (0, 0, ctypes.addressof(generation), generation.value, 0 if environ is None else id(environ),
                 id(keys[0]), 0 if values[0] is None else id(values[0]), id(keys[1]),
                 0 if values[1] is None else id(values[1]))
    guarded = [(namespace, sys.intern(name), value) for namespace, name, value in guards]
    keep.append(guarded)  # the values too: an address is never reused while the table names it
    table = b"".join(struct.pack("@Q", id(n)) for n in interned)
    records = b"".join(RECORD.pack(e.kind, id(e.type) if e.type is not None else 0,
                                    id(e.obj) if e.kind in (ArgKind.TENSOR, ArgKind.CONSTANT) else 0, e.expect,
                                    0 if d is MISSING_DEFAULT else id(d), e.alignment)
                       for e, d in zip(expected, defaults))
    guard_table = b"".join(GUARD.pack(id(namespace), id(name), id(value)) for namespace, name, value in guarded)
    header = HEADER.pack(id(constants_of_direct), ctypes.addressof(next_cell), id(fallback), id(compiled),
                          id(failed), len(names), len(interned), id(None), id(False), id(int), id(float), id(str),
                          id(dtype), id(dtype_descriptor), dtype_get, id(data_ptr), id(get_device), id(num_warps),
                          id(num_stages), *map(id, GRID_META_DEFAULTS), id(tuple), *state, len(guarded),
                          HEADER.size + len(table) + len(records))
    return native.bind(header + table + records + guard_table, tuple(keep))



def _cell(hot: Callable[..., Any]) -> Any:
    constants = getattr(hot, "__self__")  # noqa: B009 - a builtin's self: its constants
    address, fallback = struct.unpack_from("@QQ", constants, OFFSETS["$NEXT_CELL"])
    return (ctypes.c_uint64 * 2).from_address(address), fallback


def link(hot: Callable[..., Any], after: Callable[..., Any] | None) -> None:
    """Make ``hot`` (from ``make``) hand what it declines to ``after`` (another key's hot launch;
    None: its own launch function).  The caller keeps ``after`` alive while ``hot`` links to it."""
    cell, fallback = _cell(hot)
    cell[0] = fallback if after is None else id(after)


def retire(hot: Callable[..., Any]) -> None:
    """Make ``hot`` hand every call to its launch function from now on (its plan was dropped:
    a ``kernel[grid]`` kept by the caller must not launch it)."""
    cell, fallback = _cell(hot)
    cell[0], cell[1] = fallback, 0
