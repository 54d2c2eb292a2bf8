"""A compiled kernel as bytes and back: what the disk cache stores for one specialization.

Stored: the traced (and, for checked mode, instrumented) IR the backend compiled, the
``str``/``bytes`` stage outputs of ``CompiledKernel.asm``, the plain-data part of
``metadata`` (live handles such as a loaded module are the backend's ``load_cached`` to
rebuild), and the checked-mode plan when there is one.

The IR travels as a pickle written and read here only: dtypes come back as tiles' own
dtype objects (code compares them by identity), every SSA value gets a fresh id in the
reading process, and the reader accepts only classes from tiles, NumPy and a few builtins,
so an entry cannot name arbitrary code.  An entry whose IR cannot be pickled (a constexpr
holding a user object, say) is not stored.
"""

from __future__ import annotations

import io
import pickle
import types
from dataclasses import dataclass, field
from typing import Any

from .. import config
from ..backends.base import CompiledKernel, Stages
from ..core.dtypes import BY_NAME, DType
from ..core.ir import Kernel, TileType, Value

VERSION = 1
_SAFE_BUILTINS = frozenset({"frozenset", "set", "slice", "complex", "range", "bytearray"})
_SAFE_MODULES = ("tiles.", "numpy", "ml_dtypes", "collections", "enum")


@dataclass
class Entry:
    key: str
    kernel: Kernel
    asm: dict[str, str | bytes]
    metadata: dict[str, Any] = field(default_factory=dict)
    check_plan: Any = None


def _dtype(name: str) -> DType:
    return BY_NAME[name]


def _value(type_: TileType, name: str) -> Value:
    return Value(type_, name)


def _safe(module: Any, name: Any) -> bool:
    """Whether the reader accepts a global of that module and name."""
    return isinstance(module, str) and ((module == "builtins" and name in _SAFE_BUILTINS)
                                        or module.startswith(_SAFE_MODULES))


_BY_NAME = (type, types.FunctionType, types.BuiltinFunctionType)


class _Pickler(pickle.Pickler):
    """Writes what ``_Unpickler`` reads: anything that would be written by a name the reader refuses
    (a class, a function, an instance of a class from elsewhere) raises instead."""

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t is DType:
            return _dtype, (obj.name,)
        if t is Value:
            return _value, (obj.type, obj.name)
        if t in _SAFE_TYPES:  # (instances of a class found safe before: most objects of the IR)
            return NotImplemented
        if isinstance(obj, _BY_NAME):
            module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        else:  # its class is written by name (or it reduces to a global of its class's module)
            module, name = t.__module__, t.__qualname__
        if not _safe(module, name):
            raise pickle.PicklingError(f"a cache entry may not name {module}.{name}")
        if not isinstance(obj, _BY_NAME) and len(_SAFE_TYPES) < 4096:
            _SAFE_TYPES.add(t)
        return NotImplemented


_SAFE_TYPES: set[type] = set()


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if _safe(module, name):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a cache entry may not name {module}.{name}")


def _plain(value: Any) -> bool:
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def portable_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The plain-data entries of ``metadata`` (live handles such as a loaded module are dropped)."""
    return {name: value for name, value in metadata.items() if _plain(value)}


def encode(key: str, compiled: CompiledKernel, check_plan: Any = None) -> bytes | None:
    """The entry's bytes; None when the kernel cannot be stored (then it is just not cached)."""
    stages = compiled.asm.made() if isinstance(compiled.asm, Stages) else compiled.asm  # (the rest are remade)
    asm = {stage: bytes(v) if isinstance(v, bytearray) else v for stage, v in stages.items()
           if isinstance(v, (str, bytes, bytearray))}
    record = {"version": VERSION, "key": key, "kernel": compiled.ir, "asm": asm,
              "metadata": portable_metadata(compiled.metadata), "check_plan": check_plan}
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(record)
        data = buffer.getvalue()
        if config.check_ir():  # TILES_CHECK=1: read it back (the pickler already refuses what the reader would)
            decode(data)
    except Exception:  # anything pickle cannot take or the reader would not accept
        return None
    return data


def decode(payload: bytes) -> Entry:
    """The entry in ``payload``; raises ``ValueError`` when it is not one this tiles wrote."""
    try:
        record = _Unpickler(io.BytesIO(payload)).load()
    except Exception as e:
        raise ValueError(f"unreadable entry: {type(e).__name__}: {e}") from None
    if not isinstance(record, dict) or record.get("version") != VERSION \
            or not isinstance(record.get("kernel"), Kernel) or not isinstance(record.get("asm"), dict):
        raise ValueError("not a compiled-kernel entry")
    return Entry(record["key"], record["kernel"], record["asm"], dict(record.get("metadata") or {}),
                 record.get("check_plan"))
