"""The one helper for the C-API LLVM IR of the native launch builtins.

The three builtins (``trampoline.py``, ``direct_launch.py``, ``hot_launch_ir.py``) are LLVM IR
functions that call CPython's C API and libcuda, compiled once per process by llvmlite and
wrapped as Python builtins whose ``self`` is a ``bytes`` of constants.  What they share is here:

- ``Layout``: the constants' fields (a name and a ``struct`` code each, in order).  The offsets
  are derived from the codes, never written by hand, and the IR names each as ``$NAME``.
- ``declarations``: the ``declare`` lines of the functions a module calls, from one table of
  signatures (``SIGNATURES``), and ``symbols``: the CPython ones llvmlite must resolve.
- ``table``: the ``$NAME`` substitutions of several layouts and vocabularies, no name twice.
- ``fill``: a template to IR text.  A line ``  %x = read TYPE from %BASE at OFFSET`` (a ``$FIELD``,
  an i64 value or a number of bytes) becomes the pair ``%x_at = getelementptr i8, ptr %BASE, i64
  OFFSET`` / ``%x = load TYPE, ptr %x_at``; ``at [INDEX]`` reads item INDEX of an array of TYPE
  (``getelementptr TYPE``).  A line ``  br raised %p, label %A, label %B`` becomes the test of
  ``PyErr_Occurred`` (``%p_error``, ``%p_failed``) and a branch to A when a Python exception is set,
  else to B.  Then every ``$NAME`` becomes its number (longest names first).
- ``OBJECT``: the CPython object layout the IR reads (an object's type, a tuple's size and items),
  which ``check_object_layout`` confirms before any builtin is built.
- ``NativeBuiltin`` (compile and wrap with ``PyCFunction_NewEx``) and ``LazyBuiltin`` (once per
  process, or the reason it cannot be built).
"""

from __future__ import annotations

import ctypes
import re
import struct
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class Layout:
    """A ``bytes`` of constants: ``fields`` as (NAME, struct code), native alignment.  ``offsets``
    maps ``$<prefix>NAME`` to each field's offset; ``pack`` packs the fields in order."""

    def __init__(self, fields: Sequence[tuple[str, str]], prefix: str = "") -> None:
        self.fields = tuple(fields)
        self.struct = struct.Struct("@" + "".join(code for _, code in self.fields))
        self.size = self.struct.size
        self.offsets: dict[str, int] = {}
        codes = ""
        for name, code in self.fields:
            self.offsets[f"${prefix}{name}"] = struct.calcsize("@" + codes + code) - struct.calcsize("@" + code)
            codes += code

    def pack(self, *values: Any) -> bytes:
        return self.struct.pack(*values)


# CPython's object layout (64-bit, with the GIL) that the IR reads; ``check_object_layout`` confirms it
OBJECT = {"$OB_TYPE": 8, "$TUPLE_SIZE": 16, "$TUPLE_ITEMS": 24}


def check_object_layout() -> None:
    """The native code reads an object's type at ``$OB_TYPE`` and a tuple's length and items at
    ``$TUPLE_SIZE`` and ``$TUPLE_ITEMS``; refuse any interpreter where that is not so."""
    grid = (12345678, 2)
    word = ctypes.c_void_p.from_address
    ob_type, size, items = OBJECT["$OB_TYPE"], OBJECT["$TUPLE_SIZE"], OBJECT["$TUPLE_ITEMS"]
    if (word(id(grid) + ob_type).value != id(tuple) or word(id(grid[0]) + ob_type).value != id(int)
            or ctypes.c_ssize_t.from_address(id(grid) + size).value != 2
            or word(id(grid) + items).value != id(grid[0])):
        raise RuntimeError("this interpreter's object layout is not the one the direct launch reads")


# (result, parameters) of each function the builtins call: CPython's C API, then LLVM intrinsics
SIGNATURES: dict[str, tuple[str, str]] = {
    "PyBytes_AsString": ("ptr", "ptr"),
    "PyBytes_Size": ("i64", "ptr"),
    "PyLong_FromLong": ("ptr", "i64"),
    "PyLong_AsLongLong": ("i64", "ptr"),
    "PyLong_AsUnsignedLongLong": ("i64", "ptr"),
    "PyLong_AsLongLongAndOverflow": ("i64", "ptr, ptr"),
    "PyFloat_AsDouble": ("double", "ptr"),
    "PyErr_Occurred": ("ptr", ""),
    "PyErr_Clear": ("void", ""),
    "PyObject_CallOneArg": ("ptr", "ptr, ptr"),
    "PyObject_CallFunctionObjArgs": ("ptr", "ptr, ..."),
    "PyObject_GetAttr": ("ptr", "ptr, ptr"),
    "PyObject_Vectorcall": ("ptr", "ptr, ptr, i64, ptr"),
    "PyObject_RichCompareBool": ("i32", "ptr, ptr, i32"),
    "PyCallable_Check": ("i32", "ptr"),
    "PyDict_New": ("ptr", ""),
    "PyDict_SetItem": ("i32", "ptr, ptr, ptr"),
    "PyDict_GetItemWithError": ("ptr", "ptr, ptr"),
    "Py_IncRef": ("void", "ptr"),
    "Py_DecRef": ("void", "ptr"),
    "PyEval_SaveThread": ("ptr", ""),
    "PyEval_RestoreThread": ("void", "ptr"),
    "llvm.memset.p0.i64": ("void", "ptr, i8, i64, i1"),
    "llvm.memcpy.p0.p0.i64": ("void", "ptr, ptr, i64, i1"),
}


def declarations(names: Sequence[str]) -> str:
    """The ``declare`` lines of ``names`` (keys of ``SIGNATURES``), one a line, in that order."""
    return "".join(f"declare {SIGNATURES[n][0]} @{n}({SIGNATURES[n][1]})\n" for n in names)


def symbols(names: Sequence[str]) -> tuple[str, ...]:
    """The CPython functions among ``names``: what llvmlite resolves from ``ctypes.pythonapi``."""
    return tuple(n for n in names if not n.startswith("llvm."))


def table(*parts: Mapping[str, int]) -> dict[str, int]:
    """The ``$NAME`` substitutions of ``parts`` in one dict; a name in two parts is an error (two
    words spelled alike must not mean two things)."""
    out: dict[str, int] = {}
    for part in parts:
        for name, value in part.items():
            if name in out:
                raise ValueError(f"{name} is named twice in the native launch's IR substitutions")
            out[name] = value
    return out


_READ = re.compile(r"^( +)%(\w+) = read (\w+) from (%\w+) at (\[)?([$%]?\w+)(?(5)\])$", re.MULTILINE)
_RAISED = re.compile(r"^( +)br raised %(\w+), (label %\w+, label %\w+)$", re.MULTILINE)


def _read(m: re.Match[str]) -> str:
    indent, name, loaded, base, item, offset = m.groups()
    step = loaded if item else "i8"
    return (f"{indent}%{name}_at = getelementptr {step}, ptr {base}, i64 {offset}\n"
            f"{indent}%{name} = load {loaded}, ptr %{name}_at")


def _raised(m: re.Match[str]) -> str:
    indent, name, labels = m.groups()
    return (f"{indent}%{name}_error = call ptr @PyErr_Occurred()\n"
            f"{indent}%{name}_failed = icmp ne ptr %{name}_error, null\n"
            f"{indent}br i1 %{name}_failed, {labels}")


def fill(template: str, substitutions: Mapping[str, int]) -> str:
    """IR text from ``template``: each ``read`` line as a getelementptr and a load, each ``br
    raised`` line as the test of ``PyErr_Occurred`` and a branch (see the module docstring), then
    each ``$NAME`` of ``substitutions`` replaced, longest names first."""
    text = _RAISED.sub(_raised, _READ.sub(_read, template))
    for name, value in sorted(substitutions.items(), key=lambda item: -len(item[0])):
        text = text.replace(name, str(value))
    left = re.search(r"\$[A-Z]\w*", text)
    if left:
        raise ValueError(f"{left[0]} has no value in the native launch's IR")
    return text


class MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


class NativeBuiltin:
    """One LLVM IR function ``name(self, args)`` calling the CPython API ``symbols``, compiled by
    llvmlite's MCJIT and wrapped as Python builtins (``PyCFunction_NewEx`` with ``flags``)."""

    def __init__(self, ir: str, symbols: Sequence[str], name: str, flags: int, doc: bytes) -> None:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        api = ctypes.pythonapi
        for symbol in symbols:
            llvm.add_symbol(symbol, ctypes.cast(getattr(api, symbol), ctypes.c_void_p).value)
        module = llvm.parse_assembly(ir)
        module.verify()
        machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        self.engine = llvm.create_mcjit_compiler(module, machine)
        self.engine.finalize_object()
        address = self.engine.get_function_address(name)
        if not address:
            raise RuntimeError(f"llvmlite did not produce {name}")
        self.method = MethodDef(name.encode(), address, flags, doc)
        self.new_function = api.PyCFunction_NewEx
        self.new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
        self.new_function.restype = ctypes.py_object

    def bind(self, constants: bytes, keep: tuple[Any, ...] = ()) -> Callable[..., int]:
        """A builtin whose ``self`` is ``constants``; its module slot holds this object (the
        machine code and the method definition) and ``keep`` (what the constants point to)."""
        function: Callable[..., int] = self.new_function(ctypes.addressof(self.method), constants,
                                                         (self, *keep))
        return function


class LazyBuiltin:
    """A ``NativeBuiltin`` built on first use, once per process; None (and the reason) where
    it cannot be built (not 64-bit CPython, no JIT for this host, ``check`` refusing)."""

    def __init__(self, build: Callable[[], NativeBuiltin], check: Callable[[], None] = lambda: None) -> None:
        self._build, self._check = build, check
        self._lock = threading.Lock()
        self._native: NativeBuiltin | None = None
        self._error: Exception | None = None

    def get(self) -> NativeBuiltin | None:
        if self._native is None and self._error is None:
            with self._lock:
                if self._native is None and self._error is None:
                    try:
                        if sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
                            raise RuntimeError("native launches need 64-bit CPython")
                        self._check()
                        self._native = self._build()
                    except Exception as e:  # callers fall back to their Python forms
                        self._error = e
        return self._native

    def unavailable_reason(self) -> str | None:
        self.get()
        return None if self._error is None else f"{type(self._error).__name__}: {self._error}"
