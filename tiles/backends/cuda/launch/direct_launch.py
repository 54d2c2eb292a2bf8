"""A native launch from the arguments themselves: ``direct(stream, grid, *values) -> status``.

``trampoline.py`` takes a record that Python packed with ``struct.pack``; this one takes the
launch's Python objects (``METH_FASTCALL``: no tuple is built) and converts them in native code,
so the binder (``runtime/binder.py``) calls it straight after its key lookup, with each torch
tensor given as its ``data_ptr()`` (read once, for the key too), every kernel parameter in
order.  Its ``self`` is a ``bytes`` of constants::

    header: cuCtxGetCurrent, cuLaunchKernel, context, CUfunction, block, shared bytes,
            argument buffer size, address and expected value of the driver generation word,
            the current-stream function (a Python callable of the device), the device (a Python
            int), Python's None and int type, the number of Python arguments
    then one (kind, offset) pair of u32 per kernel parameter: where in the argument buffer
            the value goes and how it is converted (``KINDS``; 0: not a run-time argument)

The native function

1. checks the argument count (``trampoline.BAD_RECORD`` if it is not the constants'), that the
   process's driver is still the one the constants name (``runtime.driver_generation``) and that
   the thread's current context is the kernel's (else ``trampoline.FALLBACK``);
2. converts each value into a zeroed argument buffer as ``struct.pack`` would (the same C-API
   conversions in native mode: an fp32 is the C cast of the double; a value ``struct`` would
   refuse, such as an int out of range or a str, gives ``FALLBACK`` so the launcher's path
   reports it); the grid, a ``tuple`` of one to three ``int`` in 1 .. 2**31 - 1 (else
   ``FALLBACK``: the caller's own grid handling decides), as three i32 at the buffer's end;
3. takes the stream: ``None`` asks the current-stream function (torch's raw current stream: the
   capturing one under CUDA graph capture; an exception from it propagates), an ``int`` is the
   handle, anything else gives ``FALLBACK``;
4. releases the GIL around ``cuLaunchKernel`` and returns its status.

``make`` returns None where this cannot work (no JIT, a parameter kind it does not convert);
the launcher then keeps its Python direct form.  ``hot_launch.py`` compiles this module's IR
(``ir()``) into its own and calls the function with the arguments it has checked.
"""

from __future__ import annotations

import ctypes
import enum
import struct
from collections.abc import Callable, Sequence

from . import trampoline
from .capi import OBJECT, Layout, LazyBuiltin, NativeBuiltin, check_object_layout, declarations, fill, symbols, table


class Conversion(enum.IntEnum):
    """How one kernel parameter's Python value becomes its bytes in the argument buffer."""

    SKIP = 0  # not a run-time argument
    U64 = 1
    I64 = 2
    S32 = 3
    U32 = 4
    F32 = 5
    F64 = 6


KINDS = {"Q": Conversion.U64, "q": Conversion.I64, "i": Conversion.S32, "I": Conversion.U32,
         "f": Conversion.F32, "d": Conversion.F64}  # struct code -> its native conversion
SKIP = Conversion.SKIP
HEADER = Layout((*trampoline.DRIVER_FIELDS, ("ARGS_SIZE", "Q"), ("GENERATION_AT", "Q"), ("GENERATION", "Q"),
                 ("STREAM_FN", "Q"), ("DEVICE", "Q"), ("NONE", "Q"), ("INT_TYPE", "Q"), ("NARGS", "Q"),
                 ("TUPLE_TYPE", "Q")))
ENTRY = struct.Struct("@II")  # per kernel parameter after the header: its Conversion, its offset in the buffer
_OFFSETS = table(HEADER.offsets, {"$TABLE": HEADER.size}, OBJECT, trampoline.STATUS)
METH_FASTCALL = 0x0080
MAX_ARGS_SIZE = 32764  # cuLaunchKernel's parameter limit on recent drivers

Direct = Callable[..., int]

_API = ("PyBytes_AsString", "PyLong_FromLong", "PyLong_AsLongLong", "PyLong_AsUnsignedLongLong", "PyFloat_AsDouble",
        "PyErr_Occurred", "PyErr_Clear", "PyObject_CallOneArg", "Py_DecRef", "PyEval_SaveThread",
        "PyEval_RestoreThread", "llvm.memset.p0.i64")
_IR = """
$DECLARATIONS

define ptr @tiles_direct_launch(ptr %self, ptr %args, i64 %nargs) {
entry:
  %constants = call ptr @PyBytes_AsString(ptr %self)
$CHECK_COUNTcheck_generation:
  %generation_at = read ptr from %constants at $GENERATION_AT
  %generation = load volatile i64, ptr %generation_at
  %expected_generation = read i64 from %constants at $GENERATION
  %same_driver = icmp eq i64 %generation, %expected_generation
  br i1 %same_driver, label %check_context, label %fallback
$CHECK_CONTEXT
failed_conversion:
  call void @PyErr_Clear()
  br label %fallback
prepare:
  %args_size = read i64 from %constants at $ARGS_SIZE
  %buffer = alloca i8, i64 %args_size, align 16
  %grid_slots = alloca [3 x i32]
  call void @llvm.memset.p0.i64(ptr align 16 %buffer, i8 0, i64 %args_size, i1 false)
  %count = sub i64 %nargs, 2
  br label %loop
loop:
  %i = phi i64 [ 0, %prepare ], [ %next, %stored ]
  %more = icmp ult i64 %i, %count
  br i1 %more, label %convert, label %grid
convert:
  %table_index = shl i64 %i, 3
  %table_offset = add i64 %table_index, $TABLE
  %kind_at = getelementptr i8, ptr %constants, i64 %table_offset
  %kind = load i32, ptr %kind_at
  %offset_at = getelementptr i8, ptr %kind_at, i64 4
  %offset32 = load i32, ptr %offset_at
  %offset = zext i32 %offset32 to i64
  %to = getelementptr i8, ptr %buffer, i64 %offset
  %arg_index = add i64 %i, 2
  %object = read ptr from %args at [%arg_index]
$SWITCH$CONVERSIONSstored:
  %next = add i64 %i, 1
  br label %loop
grid:
  %grid_object = read ptr from %args at [1]
  %grid_type = read ptr from %grid_object at $OB_TYPE
  %tuple_type = read ptr from %constants at $TUPLE_TYPE
  %is_tuple = icmp eq ptr %grid_type, %tuple_type
  br i1 %is_tuple, label %grid_size, label %fallback
grid_size:
  %grid_length = read i64 from %grid_object at $TUPLE_SIZE
  %grid_some = icmp sge i64 %grid_length, 1
  %grid_few = icmp sle i64 %grid_length, 3
  %grid_length_ok = and i1 %grid_some, %grid_few
  br i1 %grid_length_ok, label %grid_axes, label %fallback
grid_axes:
  %grid_items = getelementptr i8, ptr %grid_object, i64 $TUPLE_ITEMS
  %int_type_for_grid = read ptr from %constants at $INT_TYPE
  br label %axis
axis:
  %axis_index = phi i64 [ 0, %grid_axes ], [ %next_axis, %axis_stored ]
  %axes_left = icmp ult i64 %axis_index, 3
  br i1 %axes_left, label %axis_value, label %grid_done
axis_value:
  %axis_slot = getelementptr i32, ptr %grid_slots, i64 %axis_index
  %axis_given = icmp ult i64 %axis_index, %grid_length
  br i1 %axis_given, label %axis_read, label %axis_one
axis_one:
  store i32 1, ptr %axis_slot
  br label %axis_stored
axis_read:
  %axis_object = read ptr from %grid_items at [%axis_index]
  %axis_type = read ptr from %axis_object at $OB_TYPE
  %axis_is_int = icmp eq ptr %axis_type, %int_type_for_grid
  br i1 %axis_is_int, label %axis_convert, label %fallback
axis_convert:
  %axis_wide = call i64 @PyLong_AsLongLong(ptr %axis_object)
  %axis_low = icmp sgt i64 %axis_wide, 0
  %axis_high = icmp sle i64 %axis_wide, 2147483647
  %axis_ok = and i1 %axis_low, %axis_high
  br i1 %axis_ok, label %axis_store, label %axis_bad
axis_bad:
  br raised %axis, label %failed_conversion, label %fallback
axis_store:
  %axis_narrow = trunc i64 %axis_wide to i32
  store i32 %axis_narrow, ptr %axis_slot
  br label %axis_stored
axis_stored:
  %next_axis = add i64 %axis_index, 1
  br label %axis
grid_done:
  %grid_x = load i32, ptr %grid_slots
  %grid_y_slot = getelementptr i32, ptr %grid_slots, i64 1
  %grid_y = load i32, ptr %grid_y_slot
  %grid_z_slot = getelementptr i32, ptr %grid_slots, i64 2
  %grid_z = load i32, ptr %grid_z_slot
  br label %grid_store
grid_store:
  %grid_x_offset = sub i64 %args_size, 12
  %grid_x_at = getelementptr i8, ptr %buffer, i64 %grid_x_offset
  store i32 %grid_x, ptr %grid_x_at, align 1
  %grid_y_at = getelementptr i8, ptr %grid_x_at, i64 4
  store i32 %grid_y, ptr %grid_y_at, align 1
  %grid_z_at = getelementptr i8, ptr %grid_x_at, i64 8
  store i32 %grid_z, ptr %grid_z_at, align 1
  %stream_object = load ptr, ptr %args
  %none = read ptr from %constants at $NONE
  %no_stream = icmp eq ptr %stream_object, %none
  br i1 %no_stream, label %current_stream, label %given_stream
current_stream:
  %stream_fn = read ptr from %constants at $STREAM_FN
  %device = read ptr from %constants at $DEVICE
  %answer = call ptr @PyObject_CallOneArg(ptr %stream_fn, ptr %device)
  %no_answer = icmp eq ptr %answer, null
  br i1 %no_answer, label %raise, label %read_answer
raise:
  ret ptr null
read_answer:
  %current_handle = call i64 @PyLong_AsUnsignedLongLong(ptr %answer)
  call void @Py_DecRef(ptr %answer)
  br raised %answer, label %raise, label %launch
given_stream:
  %type = read ptr from %stream_object at $OB_TYPE
  %int_type = read ptr from %constants at $INT_TYPE
  %is_int = icmp eq ptr %type, %int_type
  br i1 %is_int, label %read_given, label %fallback
read_given:
  %given_handle = call i64 @PyLong_AsUnsignedLongLong(ptr %stream_object)
  %given_maybe_error = icmp eq i64 %given_handle, -1
  br i1 %given_maybe_error, label %given_check, label %launch
given_check:
  br raised %given, label %failed_conversion, label %launch
launch:
  %handle = phi i64 [ %current_handle, %read_answer ], [ %given_handle, %read_given ],
                    [ %given_handle, %given_check ]
  %stream = inttoptr i64 %handle to ptr
  %size_slot = alloca i64
  store i64 %args_size, ptr %size_slot
$LAUNCH_CALL}

"""

# each Conversion's block name, CPython converter, its result type, range tests ({v}: the value; a
# failing one falls back to the launcher's path), the narrowing to the stored type (None: as converted)
_CONVERSIONS = (
    (Conversion.U64, "PyLong_AsUnsignedLongLong", "i64", (), None),
    (Conversion.I64, "PyLong_AsLongLong", "i64", (), None),
    (Conversion.S32, "PyLong_AsLongLong", "i64", ("icmp sge i64 {v}, -2147483648", "icmp sle i64 {v}, 2147483647"),
     ("trunc", "i32")),
    (Conversion.U32, "PyLong_AsLongLong", "i64", ("icmp ule i64 {v}, 4294967295",), ("trunc", "i32")),
    (Conversion.F32, "PyFloat_AsDouble", "double", (), ("fptrunc", "float")),
    (Conversion.F64, "PyFloat_AsDouble", "double", (), None),
)


def _switch() -> str:
    """The switch on a parameter's Conversion to its block (``as_<name>``; SKIP: none)."""
    cases = [f"i32 {int(c)}, label %as_{c.name.lower()}" for c, *_ in _CONVERSIONS]
    indent = "\n" + " " * 36
    return f"  switch i32 %kind, label %stored [ {indent.join(cases)} ]\n"


def _conversion(conversion: Conversion, converter: str, wide: str, tests: Sequence[str],
                narrowing: tuple[str, str] | None) -> str:
    """The IR blocks converting ``%object`` (``conversion``) and storing it at ``%to``."""
    name = conversion.name.lower()
    v = f"%{name}"
    sentinel = f"icmp eq i64 {v}, -1" if wide == "i64" else f"fcmp oeq double {v}, -1.0"
    after_check = f"{name}_range" if tests else f"{name}_store"
    lines = [f"as_{name}:", f"  {v} = call {wide} @{converter}(ptr %object)",
             f"  {v}_maybe_error = {sentinel}",
             f"  br i1 {v}_maybe_error, label %{name}_check, label %{after_check}",
             f"{name}_check:", f"  br raised {v}, label %failed_conversion, label %{after_check}"]
    if tests:
        lines.append(f"{name}_range:")
        fits = ""
        for i, test in enumerate(tests):
            lines.append(f"  {v}_test{i} = {test.format(v=v)}")
            if fits:
                lines.append(f"  {v}_fits{i} = and i1 {fits}, {v}_test{i}")
                fits = f"{v}_fits{i}"
            else:
                fits = f"{v}_test{i}"
        lines.append(f"  br i1 {fits}, label %{name}_store, label %fallback")
    lines.append(f"{name}_store:")
    stored_type, value = wide, v
    if narrowing is not None:
        op, stored_type = narrowing
        value = f"{v}_narrow"
        lines.append(f"  {value} = {op} {wide} {v} to {stored_type}")
    lines += [f"  store {stored_type} {value}, ptr %to, align 1", "  br label %stored"]
    return "\n".join(lines) + "\n"


def ir() -> str:
    """The LLVM IR module of ``tiles_direct_launch`` (``hot_launch`` compiles it into its own module too)."""
    text = _IR.replace("$CONVERSIONS", "".join(_conversion(*c) for c in _CONVERSIONS)).replace("$SWITCH", _switch())
    text = text.replace("$LAUNCH_CALL", trampoline.launch_call("%buffer", "%size_slot"))
    text = text.replace("$CHECK_COUNT", trampoline.expect_constant("nargs", "NARGS", "check_generation", "bad_count"))
    text = text.replace("$CHECK_CONTEXT", trampoline.check_context("prepare"))
    return fill(text.replace("$DECLARATIONS\n", declarations(_API)), _OFFSETS)


PYTHON_SYMBOLS = symbols(_API)

enabled = True  # False: launchers built from now on keep the Python direct form (for comparisons)
_builtin = LazyBuiltin(lambda: NativeBuiltin(
    ir(), PYTHON_SYMBOLS, "tiles_direct_launch", METH_FASTCALL,
    b"launch a kernel from its arguments (tiles.backends.cuda.launch.direct_launch)"), check_object_layout)


def unavailable_reason() -> str | None:
    """Why ``make`` returns None for every kernel (None when it does not)."""
    return _builtin.unavailable_reason()


def layout(codes: Sequence[str | None]) -> list[tuple[Conversion, int]] | None:
    """(kind, offset) per kernel parameter for an argument struct of ``codes`` (None: a parameter
    that is not a run-time argument) followed by the grid's three i32; None when a code has no
    native conversion."""
    table: list[tuple[Conversion, int]] = []
    fmt = "@"
    for code in codes:
        if code is None:
            table.append((SKIP, 0))
            continue
        kind = KINDS.get(code)
        if kind is None:
            return None
        offset = struct.calcsize(fmt + code) - struct.calcsize("@" + code)
        table.append((kind, offset))
        fmt += code
    return table


def make(get_current: int, launch_kernel: int, context: int, function: int, block: int, shared: int,
         codes: Sequence[str | None], generation: ctypes.c_uint64, current_stream: Callable[[int], int],
         device: int) -> Direct | None:
    """``direct(stream, grid, *values) -> status`` for one kernel in one context (see the
    module docstring); ``codes``: the ``struct`` code of each kernel parameter, None where it is
    not a run-time argument; the argument struct is ``@`` + the codes + ``iii``."""
    native = _builtin.get() if enabled else None
    table = layout(codes)
    if native is None or table is None or not (get_current and launch_kernel):
        return None
    args_size = struct.calcsize("@" + "".join(c for c in codes if c) + "iii")
    if args_size > MAX_ARGS_SIZE:
        return None
    device_object = int(device)
    header = HEADER.pack(get_current, launch_kernel, context, function, block, shared, args_size,
                         ctypes.addressof(generation), generation.value, id(current_stream), id(device_object),
                         id(None), id(int), 2 + len(table), id(tuple))
    constants = header + b"".join(ENTRY.pack(kind, offset) for kind, offset in table)
    return native.bind(constants, (current_stream, device_object, generation))
