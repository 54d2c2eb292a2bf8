"""What a kernel's compiled code depends on in Python: sources and the globals they read.

``source_fingerprint`` hashes the kernel's source, the source of every function it reaches
(``@jit`` helpers and plain Python functions of the user's code, by global name, closure or
``module.name``), and the value of every other global those functions read
(``tl.constexpr`` values, dtypes, numbers).  Together with the specialization it decides
whether a cached trace can stand in for a fresh one.  This module does not import the jit
layer: a ``@jit`` function is recognised as an object wrapping a Python function in ``.fn``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import sys
import sysconfig
import types
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.dtypes import DType, PointerType
from ..core.frontend import source_lines

_TILES_ROOT = Path(__file__).resolve().parents[1]
_INSTALLED = tuple({str(Path(p).resolve()) for p in (sysconfig.get_paths()["purelib"],
                                                     sysconfig.get_paths()["stdlib"],
                                                     sys.prefix, sys.base_prefix)})


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


# types whose instances never wrap a function (``getattr_static`` costs more than the rest of a
# fingerprint: most globals a kernel reads are modules, functions and numbers)
_PLAIN = frozenset({types.ModuleType, types.BuiltinFunctionType, int, float, bool, str, bytes, complex,
                    type(None), tuple, list, dict, set, frozenset, DType, PointerType})


def _wrapped_function(obj: Any) -> types.FunctionType | None:
    """The Python function of a ``@jit`` function (its ``.fn``), else None."""
    t = type(obj)
    if t in _PLAIN or (t is types.FunctionType and "fn" not in obj.__dict__) \
            or (t is type and obj.__module__ == "builtins"):  # (float, range...)
        return None
    fn = inspect.getattr_static(obj, "fn", None)  # never runs __getattr__ (placeholders raise)
    return fn if isinstance(fn, types.FunctionType) else None


def _is_user_function(obj: Any) -> bool:
    """A plain Python function from user code (not tiles, the standard library or site-packages)."""
    if not isinstance(obj, types.FunctionType):
        return False
    return _is_user_file(obj.__code__.co_filename)


@functools.lru_cache(maxsize=4096)
def _is_user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's (resolving a path is slow: once per file)."""
    if filename.startswith("<"):
        return True
    path = str(Path(filename).resolve())
    return not path.startswith(str(_TILES_ROOT)) and not path.startswith(_INSTALLED)


def _names_read(fn: types.FunctionType) -> list[str]:
    return sorted({n for code in _code_objects(fn.__code__) for n in code.co_names})


def _closure_values(fn: types.FunctionType) -> list[Any]:
    values = []
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return values


def _globals_read(fn: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """(name, value) of the module globals ``fn`` reads, ``module.name`` ones included."""
    names = _names_read(fn)
    for name in names:
        if name not in fn.__globals__:
            continue
        obj = fn.__globals__[name]
        yield name, obj
        if isinstance(obj, types.ModuleType):
            for attr in names:
                if attr in vars(obj):
                    yield f"{name}.{attr}", vars(obj)[attr]


def called_jit_functions(fn: Any) -> list[Any]:
    """The ``@jit`` functions a Python function reaches by global name, closure or ``module.name``."""
    found = [obj for _, obj in _globals_read(fn) if _wrapped_function(obj) is not None]
    found += [obj for obj in _closure_values(fn) if _wrapped_function(obj) is not None]
    return found


def _source_override(obj: Any) -> str | None:
    """The text a ``@jit`` function compiles instead of its file (an edited ``src``, a kernel made
    by ``exec``: runtime/kernel_source.py), or None."""
    if isinstance(obj, types.ModuleType):
        return None
    found = inspect.getattr_static(obj, "_source_override", None)
    text = getattr(found, "text", None)
    return text if isinstance(text, str) else None


# a code object's source, found once: ``inspect.getsource`` searches modules and files on each call
_SOURCES: weakref.WeakKeyDictionary[types.CodeType, str] = weakref.WeakKeyDictionary()


def _function_source(fn: types.FunctionType, override: str | None = None) -> str:
    if override is not None:
        return override
    text = _SOURCES.get(fn.__code__)
    if text is None:
        try:
            text = "".join(source_lines(fn)[0])  # (inspect.getsource's text, shared with the frontend)
        except (OSError, TypeError):
            text = fn.__code__.co_code.hex()
        _SOURCES[fn.__code__] = text
    return text


def value_text(value: Any) -> str | None:
    """The text a global's value contributes to the fingerprint; None for what does not shape
    the code by its value (modules, classes, builtins: their behaviour is tiles' or Python's)."""
    inner = getattr(value, "value", value) if type(value).__name__ == "constexpr" else value
    if isinstance(inner, (types.ModuleType, type, types.BuiltinFunctionType)):
        return None
    if type(inner) is types.FunctionType:  # (what the last line gives it, found sooner)
        return "builtins.function"
    if isinstance(inner, (bool, int, float, complex, str, bytes)) or inner is None:
        return f"{type(inner).__name__}:{inner!r}"
    if isinstance(inner, (tuple, list)):
        return f"{type(inner).__name__}:[{', '.join(str(value_text(v)) for v in inner)}]"
    if dataclasses.is_dataclass(inner) or type(inner).__module__.startswith(("tiles.", "numpy")):
        return f"{type(inner).__module__}.{type(inner).__qualname__}:{inner!r}"
    return f"{type(inner).__module__}.{type(inner).__qualname__}"


def reached_functions(jit_fn: Any) -> list[types.FunctionType]:
    """The Python function of ``jit_fn`` and every ``@jit`` or user function it reaches,
    transitively (by global name, closure or ``module.name``), each once."""
    root = _wrapped_function(jit_fn)
    pending: list[types.FunctionType] = [root if root is not None else jit_fn]
    found: dict[int, types.FunctionType] = {}
    while pending:
        fn = pending.pop()
        if id(fn) in found:
            continue
        found[id(fn)] = fn
        for obj in [obj for _, obj in _globals_read(fn)] + _closure_values(fn):
            wrapped = _wrapped_function(obj)
            if wrapped is not None:
                pending.append(wrapped)
            elif _is_user_function(obj):
                pending.append(obj)
    return list(found.values())


def globals_read(fn: types.FunctionType) -> Iterator[tuple[dict[str, Any], str, Any]]:
    """(namespace, name, value) of each module global ``fn`` reads by name, and of each
    attribute it reads of a module global (``namespace`` is then that module's ``vars``)."""
    names = _names_read(fn)
    for name in names:
        if name not in fn.__globals__:
            continue
        obj = fn.__globals__[name]
        yield fn.__globals__, name, obj
        if isinstance(obj, types.ModuleType):
            namespace = vars(obj)
            for attr in names:
                if attr in namespace:
                    yield namespace, attr, namespace[attr]


def source_fingerprint(jit_fn: Any) -> str:
    """sha256 over the source of ``jit_fn``, of every function it reaches, transitively, and of
    the values of the globals they read."""
    digest = hashlib.sha256()
    seen: set[tuple[int, str | None]] = set()
    root = _wrapped_function(jit_fn)
    pending: list[tuple[types.FunctionType, str | None]] = [
        (root, _source_override(jit_fn)) if root is not None else (jit_fn, None)]
    while pending:
        fn, override = pending.pop()
        if (id(fn), override) in seen:
            continue
        seen.add((id(fn), override))
        digest.update(f"def {fn.__module__}.{fn.__qualname__}\n".encode())
        digest.update(_function_source(fn, override).encode())
        reached = [(name, obj) for name, obj in _globals_read(fn)]
        reached += [(f"<closure {i}>", obj) for i, obj in enumerate(_closure_values(fn))]
        for name, obj in reached:
            wrapped = _wrapped_function(obj)
            if wrapped is not None:
                pending.append((wrapped, _source_override(obj)))
            elif _is_user_function(obj):
                pending.append((obj, None))
            else:
                text = value_text(obj)
                if text is not None:
                    digest.update(f"global {name} = {text}\n".encode())
    return digest.hexdigest()


_STABLE: dict[tuple[type, str], Any] = {}  # a frozen dataclass's form, by type and repr (every compile key asks)


def stable(value: Any) -> Any:
    """A JSON-able form of a target/options value whose text does not depend on hash seeds
    (shared between calls for a frozen dataclass: do not modify it)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # keyed by the text, not by ==: Options(x=1) == Options(x=True), but their forms differ
        key = (type(value), repr(value)) if type(value).__dataclass_params__.frozen else None  # type: ignore[attr-defined]
        found = _STABLE.get(key) if key is not None else None
        if found is None:
            found = {f.name: stable(getattr(value, f.name)) for f in dataclasses.fields(value)}
            if key is not None and len(_STABLE) < 1024:
                _STABLE[key] = found
        return found
    if isinstance(value, (frozenset, set)):
        return sorted(str(stable(v)) for v in value)
    if isinstance(value, (list, tuple)):
        return [stable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of tiles' own source: a changed compiler never reuses an older compiler's output."""
    digest = hashlib.sha256()
    sources = sorted(os.path.join(folder, name) for folder, _, names in os.walk(_TILES_ROOT)
                     for name in names if name.endswith(".py"))
    for path in sources:
        digest.update(os.path.relpath(path, _TILES_ROOT).encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()
