"""A native launch trampoline: one Python call from a packed launch record to ``cuLaunchKernel``.

Crossing into C through ctypes costs a microsecond or two per call (converting each argument,
building a libffi call); the driver's ``cuLaunchKernel`` itself costs about four.  This module
JIT-compiles (llvmlite, MCJIT, once per process) one small native function and wraps it as a
Python builtin (``PyCFunction_NewEx`` with ``METH_O``), so a launch is a plain builtin call
with one argument: a ``bytes`` *record* that the launcher packs with one ``struct.pack``::

    record: u64 stream | the kernel's arguments in C struct layout, ending with the grid's
                         three i32 sizes (what the ``extra`` launch buffer carries)

Each kernel's launcher gets its own builtin whose ``self`` is a ``bytes`` of *constants*:
the addresses of ``cuCtxGetCurrent`` and ``cuLaunchKernel`` in the loaded libcuda, the
context the kernel was loaded in, the CUfunction, block size, dynamic shared bytes, the
record's size and the argument buffer's size.  The native function

1. checks the record's size (``BAD_RECORD`` if it is not the kernel's);
2. asks ``cuCtxGetCurrent`` and returns ``FALLBACK`` unless it succeeds with the kernel's
   context (the caller then takes the general path, which makes the context current);
3. releases the GIL, calls ``cuLaunchKernel(function, grid, block, shared, stream, NULL,
   extra)`` with ``extra`` pointing into the record, takes the GIL back and returns the
   status (0 on success, a ``CUresult`` otherwise).

Records are fresh immutable ``bytes`` objects, so threads never share one: no per-thread
buffer, no lock, and the GIL can be released during the driver call as ctypes' CDLL does.
``make`` returns None where this cannot work (not CPython, no ``ctypes.pythonapi``, llvmlite
unable to JIT for the host); launchers then use ctypes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ...launch_facts import DECLINED
from .. import driver as cu
from .capi import Layout, LazyBuiltin, NativeBuiltin, declarations, fill, symbols, table

FALLBACK = DECLINED  # the thread's current context is not the kernel's (or cannot be read)
BAD_RECORD = -2  # the record's size is not the one the constants name
RECORD_PREFIX = "Q"  # the stream handle, ahead of the kernel's arguments
# The words every native launch's constants start with (``check_context`` and ``launch_call``
# read them; ``direct_launch.HEADER`` starts with them too): libcuda's cuCtxGetCurrent and
# cuLaunchKernel, the context, the CUfunction, block size, dynamic shared bytes.
DRIVER_FIELDS = (("GET_CURRENT", "Q"), ("LAUNCH", "Q"), ("CONTEXT", "Q"), ("FUNCTION", "Q"), ("BLOCK", "I"),
                 ("SHARED", "I"))
CONSTANTS = Layout((*DRIVER_FIELDS, ("RECORD_SIZE", "Q"), ("ARGS_SIZE", "Q")))
# what every native launch's IR spells with these words: its status codes and cuLaunchKernel's ``extra``
STATUS = {"$STATUS_FALLBACK": FALLBACK, "$STATUS_BAD_RECORD": BAD_RECORD,
          "$BUFFER_POINTER": cu.CU_LAUNCH_PARAM_BUFFER_POINTER, "$BUFFER_SIZE": cu.CU_LAUNCH_PARAM_BUFFER_SIZE}
METH_O = 0x0008

Trampoline = Callable[[bytes], int]

_API = ("PyBytes_AsString", "PyBytes_Size", "PyLong_FromLong", "PyEval_SaveThread", "PyEval_RestoreThread")
_IR = """
$DECLARATIONS

define ptr @tiles_launch(ptr %self, ptr %record_object) {
entry:
  %constants = call ptr @PyBytes_AsString(ptr %self)
  %record = call ptr @PyBytes_AsString(ptr %record_object)
  %no_record = icmp eq ptr %record, null
  br i1 %no_record, label %raise, label %check_size
raise:
  ret ptr null
check_size:
  %size = call i64 @PyBytes_Size(ptr %record_object)
$CHECK_SIZE$CHECK_CONTEXT
launch:
  %stream = load ptr, ptr %record
  %grid_x_offset = sub i64 %size, 12
  %grid_x_at = getelementptr i8, ptr %record, i64 %grid_x_offset
  %grid_x = load i32, ptr %grid_x_at
  %grid_y = read i32 from %grid_x_at at 4
  %grid_z = read i32 from %grid_x_at at 8
  %arguments = getelementptr i8, ptr %record, i64 8
  %args_size_at = getelementptr i8, ptr %constants, i64 $ARGS_SIZE
$LAUNCH_CALL}
"""


def expect_constant(value: str, field: str, usable: str, bad: str) -> str:
    """The IR (shared with ``direct_launch.py``) that goes on to label ``usable`` when the i64
    ``%value`` is the constants' ``$field``, else to the block ``bad`` (defined here), which
    returns ``BAD_RECORD``."""
    return f"""  %{value}_at = getelementptr i8, ptr %constants, i64 ${field}
  %expected_{value} = load i64, ptr %{value}_at
  %{value}_ok = icmp eq i64 %{value}, %expected_{value}
  br i1 %{value}_ok, label %{usable}, label %{bad}
{bad}:
  %bad = call ptr @PyLong_FromLong(i64 $STATUS_BAD_RECORD)
  ret ptr %bad
"""


def check_context(usable: str) -> str:
    """The IR blocks ``check_context`` and ``fallback`` (shared with ``direct_launch.py``):
    ``cuCtxGetCurrent`` from the constants' first word; on to label ``usable`` when it answers
    with the constants' context, else to ``fallback``, which returns ``FALLBACK``."""
    return f"""check_context:
  %slot = alloca i64
  store i64 0, ptr %slot
  %get_current = load ptr, ptr %constants
  %query = call i32 %get_current(ptr %slot)
  %current = load i64, ptr %slot
  %context = read i64 from %constants at $CONTEXT
  %same = icmp eq i64 %current, %context
  %answered = icmp eq i32 %query, 0
  %usable = and i1 %same, %answered
  br i1 %usable, label %{usable}, label %fallback

fallback:
  %other = call ptr @PyLong_FromLong(i64 $STATUS_FALLBACK)
  ret ptr %other"""


def launch_call(arguments: str, size_at: str) -> str:
    """The IR that ends a native launch (here and in ``direct_launch.py``, whose constants start
    with the same words): ``cuLaunchKernel`` of the constants' function with ``extra`` naming
    the argument buffer ``arguments`` and the i64 at ``size_at`` as its size, the GIL released
    around the call, returning its status as a Python int.  ``%constants``, ``%stream`` and
    ``%grid_x``/``_y``/``_z`` are defined before it."""
    return f"""  %launch_at = getelementptr i8, ptr %constants, i64 $LAUNCH
  %launch_kernel = load ptr, ptr %launch_at
  %function = read ptr from %constants at $FUNCTION
  %block = read i32 from %constants at $BLOCK
  %shared = read i32 from %constants at $SHARED
  %extra = alloca [5 x ptr]
  store ptr inttoptr (i64 $BUFFER_POINTER to ptr), ptr %extra
  %extra_1 = getelementptr ptr, ptr %extra, i64 1
  store ptr {arguments}, ptr %extra_1
  %extra_2 = getelementptr ptr, ptr %extra, i64 2
  store ptr inttoptr (i64 $BUFFER_SIZE to ptr), ptr %extra_2
  %extra_3 = getelementptr ptr, ptr %extra, i64 3
  store ptr {size_at}, ptr %extra_3
  %extra_4 = getelementptr ptr, ptr %extra, i64 4
  store ptr null, ptr %extra_4
  %thread = call ptr @PyEval_SaveThread()
  %status = call i32 %launch_kernel(ptr %function, i32 %grid_x, i32 %grid_y, i32 %grid_z, i32 %block,
                                    i32 1, i32 1, i32 %shared, ptr %stream, ptr null, ptr %extra)
  call void @PyEval_RestoreThread(ptr %thread)
  %wide = sext i32 %status to i64
  %result = call ptr @PyLong_FromLong(i64 %wide)
  ret ptr %result
"""


def _ir() -> str:
    text = _IR.replace("$LAUNCH_CALL", launch_call("%arguments", "%args_size_at"))
    text = text.replace("$CHECK_SIZE", expect_constant("size", "RECORD_SIZE", "check_context", "bad_record"))
    text = text.replace("$CHECK_CONTEXT", check_context("launch"))
    return fill(text.replace("$DECLARATIONS\n", declarations(_API)), table(CONSTANTS.offsets, STATUS))


enabled = True  # False: launchers built from now on call the driver through ctypes (for comparisons)
_builtin = LazyBuiltin(lambda: NativeBuiltin(
    _ir(), symbols(_API), "tiles_launch", METH_O,
    b"launch a kernel from a packed record (tiles.backends.cuda.launch.trampoline)"))


def unavailable_reason() -> str | None:
    """Why ``make`` returns None (None when it does not)."""
    return _builtin.unavailable_reason()


def record_format(argument_codes: str) -> str:
    """The record's ``struct`` format for a kernel whose argument struct is ``@<codes>``."""
    return "@" + RECORD_PREFIX + argument_codes


def make(get_current: int, launch_kernel: int, context: int, function: int, block: int, shared: int,
         record_size: int) -> Trampoline | None:
    """The trampoline of one kernel in one context: ``trampoline(record) -> status`` (see the
    module docstring); ``get_current``/``launch_kernel`` are native addresses of libcuda's
    ``cuCtxGetCurrent``/``cuLaunchKernel`` (or stand-ins with their signatures)."""
    native = _builtin.get()
    if native is None or not (get_current and launch_kernel):
        return None
    constants = CONSTANTS.pack(get_current, launch_kernel, context, function, block, shared,
                               record_size, record_size - struct.calcsize("@" + RECORD_PREFIX))
    return native.bind(constants)
