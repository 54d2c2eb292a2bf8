"""The on-disk compile cache: backend stage outputs keyed by everything that shapes them.

What is cached is the backend's work, not the tracer's: the ``str``/``bytes``
entries of ``CompiledKernel.asm`` plus its JSON-able ``metadata``.  Tracing is cheap
and the launch path needs the live ``Kernel``, so the kernel is always re-traced;
a hit then skips ``Backend.compile`` (LLVM, ptxas, OpenCL builds) and hands the
stored stages to ``Backend.load_cached``.  Backends that keep the default
``load_cached`` (returning None) are never written to disk.

Key: tiles version and a hash of its own source, the source of the kernel and of every ``@jit`` function it
reaches by name, the specialization, the options, the target, the backend's name
and toolchain version.  As a second guard each entry records a hash of the traced
IR text, and an entry whose IR differs (a module-level constant changed, say) is
treated as a miss.

Entry file: one header line ``tiles-cache <format> <sha256 of payload> <length>``,
then the JSON payload.  Writers write a private temporary file in the same folder,
fsync it and ``os.replace`` it into place, so readers see a whole old entry or a
whole new one; a truncated or corrupted entry fails the checksum and is rebuilt.
A folder that cannot be written gives one warning per process; compiled kernels are
still kept in memory.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..backends.base import Backend, CompiledKernel, Options
from ..core.ir import Kernel
from ..core.printer import format_kernel
from .specialize import ArgSpec

if TYPE_CHECKING:
    from .jit import JITFunction

FORMAT = 1
MAGIC = "tiles-cache"
STALE_TEMP_SECONDS = 600  # a temporary file this old belongs to a writer that died mid-write


# ---------------------------------------------------------------- key


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def called_jit_functions(fn: Any) -> list[JITFunction]:
    """The ``@jit`` functions a Python function reaches by global name or ``module.name``."""
    from .jit import JITFunction
    names = {n for code in _code_objects(fn.__code__) for n in code.co_names}
    found: list[JITFunction] = []
    for name in sorted(names):
        obj = fn.__globals__.get(name)
        candidates = [obj]
        if isinstance(obj, types.ModuleType):
            candidates = [getattr(obj, attr, None) for attr in sorted(names)]
        found.extend(c for c in candidates if isinstance(c, JITFunction))
    for cell in fn.__closure__ or ():
        try:
            if isinstance(cell.cell_contents, JITFunction):
                found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return found


def _function_source(fn: Any) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return fn.__code__.co_code.hex()


def source_fingerprint(jit_fn: JITFunction) -> str:
    """sha256 over the source of ``jit_fn`` and of every @jit function it calls, transitively."""
    digest = hashlib.sha256()
    seen: set[int] = set()
    pending = [jit_fn]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        digest.update(f"{current.fn.__module__}.{current.fn.__qualname__}\n".encode())
        digest.update(_function_source(current.fn).encode())
        pending.extend(called_jit_functions(current.fn))
    return digest.hexdigest()


def _stable(value: Any) -> Any:
    """A JSON-able form of a target/options value whose text does not depend on hash seeds."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _stable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (frozenset, set)):
        return sorted(str(_stable(v)) for v in value)
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of tiles' own source: a changed compiler never reuses an older compiler's output."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def compile_key(jit_fn: JITFunction, specs: Sequence[ArgSpec], backend: Backend,
                options: Options) -> str:
    from .. import __version__
    parts = {
        "tiles": [__version__, compiler_fingerprint()],
        "source": source_fingerprint(jit_fn),
        "specialization": [repr(s.key()) for s in specs],
        "options": _stable(options),
        "target": _stable(backend.target()),
        "backend": [backend.name, backend.toolchain_version()],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def entry_path(key: str, kind: str = "kernels") -> Path:
    return config.cache_dir() / kind / key[:2] / f"{key}.json"


# ---------------------------------------------------------------- entries on disk


_warned_folders: set[str] = set()
_warned_lock = threading.Lock()


class CacheWarning(UserWarning):
    """The on-disk cache cannot be used; kernels are compiled and kept in memory only."""


def _warn_unwritable(folder: Path, error: OSError) -> None:
    root = str(config.cache_dir())
    with _warned_lock:
        if root in _warned_folders:
            return
        _warned_folders.add(root)
    warnings.warn(f"tiles cannot write its compile cache in {folder} ({error.strerror or error}); kernels "
                  f"are compiled once per process and kept in memory. Set TILES_CACHE_DIR to a writable "
                  f"folder to keep them between runs", CacheWarning, stacklevel=2)


def write_entry(path: Path, payload: bytes) -> bool:
    """Atomically replace ``path`` with a checksummed entry; False (and one warning per process)
    when the disk refuses."""
    header = f"{MAGIC} {FORMAT} {hashlib.sha256(payload).hexdigest()} {len(payload)}\n".encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        _warn_unwritable(path.parent, e)
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _remove_stale_temporaries(path)
        return True
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _warn_unwritable(path.parent, e)
        return False


def _remove_stale_temporaries(path: Path) -> None:
    """Delete what writers of ``path`` killed mid-write left; a live writer's file is younger."""
    deadline = time.time() - STALE_TEMP_SECONDS
    for leftover in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if leftover.stat().st_mtime < deadline:
                leftover.unlink()
        except OSError:  # another process removed it first
            continue


def read_entry(path: Path) -> bytes | None:
    """The payload of a valid entry at ``path``; None when missing, truncated or corrupted."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, newline, payload = data.partition(b"\n")
    fields = header.decode("ascii", "replace").split(" ")
    if not newline or len(fields) != 4 or fields[0] != MAGIC or fields[1] != str(FORMAT):
        return None
    if fields[3] != str(len(payload)) or hashlib.sha256(payload).hexdigest() != fields[2]:
        return None
    return payload


def write_json(path: Path, value: Any) -> bool:
    return write_entry(path, json.dumps(value, sort_keys=True).encode())


def read_json(path: Path) -> Any:
    payload = read_entry(path)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


# ---------------------------------------------------------------- compiled kernels


def _encode_asm(asm: dict[str, Any]) -> dict[str, dict[str, str]]:
    encoded = {}
    for stage, value in asm.items():
        if isinstance(value, str):
            encoded[stage] = {"str": value}
        elif isinstance(value, (bytes, bytearray)):
            encoded[stage] = {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
    return encoded


def _decode_asm(encoded: dict[str, dict[str, str]]) -> dict[str, str | bytes]:
    return {stage: v["str"] if "str" in v else base64.b64decode(v["bytes"])
            for stage, v in encoded.items()}


def _ir_hash(kernel: Kernel) -> str:
    """A hash of the IR text with value ids renumbered (ids are global, so they differ per trace)."""
    numbering: dict[str, str] = {}
    text = re.sub(r"%\d+\b", lambda m: numbering.setdefault(m.group(), f"%v{len(numbering)}"),
                  format_kernel(kernel))
    return hashlib.sha256(text.encode()).hexdigest()


def is_cacheable(backend: Backend) -> bool:
    return type(backend).load_cached is not Backend.load_cached


def store(key: str, compiled: CompiledKernel, kernel: Kernel) -> bool:
    try:
        payload = json.dumps({"key": key, "name": compiled.name, "ir_sha256": _ir_hash(kernel),
                              "asm": _encode_asm(compiled.asm), "metadata": compiled.metadata},
                             sort_keys=True).encode()
    except (TypeError, ValueError):  # metadata that JSON cannot hold: not cacheable
        return False
    return write_entry(entry_path(key), payload)


def load(key: str, kernel: Kernel, backend: Backend, options: Options) -> CompiledKernel | None:
    entry = read_json(entry_path(key))
    if not isinstance(entry, dict) or entry.get("key") != key \
            or entry.get("ir_sha256") != _ir_hash(kernel):
        return None
    try:
        asm = _decode_asm(entry["asm"])
    except (KeyError, TypeError, ValueError):
        return None
    return backend.load_cached(asm, dict(entry.get("metadata") or {}), kernel, options)


def compile_cached(jit_fn: JITFunction, specs: Sequence[ArgSpec], backend: Backend,
                   options: Options, kernel: Kernel) -> CompiledKernel:
    """``backend.compile(kernel, options)``, served from and saved to the disk cache when allowed."""
    if config.always_compile() or not is_cacheable(backend):
        return backend.compile(kernel, options)
    key = compile_key(jit_fn, specs, backend, options)
    compiled = load(key, kernel, backend, options)
    if compiled is not None:
        return compiled
    compiled = backend.compile(kernel, options)
    store(key, compiled, kernel)
    return compiled
