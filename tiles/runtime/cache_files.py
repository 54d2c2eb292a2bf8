"""Entries of the on-disk cache: checksummed files replaced atomically.

An entry is one header line ``tiles-cache <format> <sha256 of payload> <length>`` and the
payload.  Writers write a private temporary file in the entry's folder and ``os.replace``
it into place, so readers see a whole old entry or a whole new one.  A truncated, garbled or
foreign file fails the header/length/checksum test: it is reported once with a
``CacheWarning`` and treated as missing (the caller rebuilds and replaces it).  So writers do
not ``fsync`` (it cost more than tracing a kernel for the interpreter): an entry torn by a
crash before the data reached the disk fails the checksum and is rebuilt.
A folder that cannot be written gives one warning per process.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from .. import config

FORMAT = 1
MAGIC = "tiles-cache"
STALE_TEMP_SECONDS = 600  # a temporary file this old belongs to a writer that died mid-write


class CacheWarning(UserWarning):
    """The on-disk cache could not be used as asked (an unwritable folder, a damaged entry)."""


def entry_path(key: str, kind: str = "kernels", suffix: str = ".json") -> Path:
    return config.cache_dir().joinpath(kind, key[:2], f"{key}{suffix}")  # (one Path built, not three)


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(topic: str, message: str) -> None:
    """A ``CacheWarning`` with ``message``, at most once per ``topic`` in this process."""
    with _warned_lock:
        if topic in _warned:
            return
        _warned.add(topic)
    warnings.warn(message, CacheWarning, stacklevel=3)


def _warn_unwritable(folder: Path, error: OSError) -> None:
    warn_once(f"unwritable {config.cache_dir()}",
              f"tiles cannot write its compile cache in {folder} ({error.strerror or error}); kernels "
              f"are compiled once per process and kept in memory. Set TILES_CACHE_DIR to a writable "
              f"folder to keep them between runs")


def warn_damaged(path: Path, why: str) -> None:
    warn_once(f"damaged {path}", f"tiles ignored the damaged compile-cache entry {path} ({why}); the "
              "kernel is compiled again and the entry replaced")


def write_entry(path: Path, payload: bytes) -> bool:
    """Atomically replace ``path`` with a checksummed entry; False (and one warning per process)
    when the disk refuses."""
    header = f"{MAGIC} {FORMAT} {hashlib.sha256(payload).hexdigest()} {len(payload)}\n".encode()
    try:
        try:  # the folder usually exists: make it only when it does not (a syscall saved per write)
            fd, tmp = _temporary(path)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            _swept.add(path.parent)  # a folder that was missing a moment ago holds no stale temporaries
            fd, tmp = _temporary(path)
    except OSError as e:
        _warn_unwritable(path.parent, e)
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + payload)
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


_serial = itertools.count()


def _temporary(path: Path) -> tuple[int, str]:
    """A new private file next to ``path``: named by this process and a counter (``mkstemp``'s random
    names cost more than the write), ``mkstemp``'s when that name is taken (a dead writer's)."""
    tmp = f"{path.parent}{os.sep}.{path.name}.{os.getpid()}-{next(_serial)}.tmp"
    try:
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), tmp
    except FileExistsError:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


_swept: set[Path] = set()  # folders whose stale temporaries this process removed


def _remove_stale_temporaries(path: Path) -> None:
    """Delete what writers in ``path``'s folder killed mid-write left, once per folder and process
    (listing a folder on every write cost more than the write); a live writer's file is younger."""
    if path.parent in _swept:
        return
    _swept.add(path.parent)
    deadline = time.time() - STALE_TEMP_SECONDS
    for leftover in path.parent.glob(".*.tmp"):
        try:
            if leftover.stat().st_mtime < deadline:
                leftover.unlink()
        except OSError:  # another process removed it first
            continue


def read_entry(path: Path) -> bytes | None:
    """The payload of a valid entry at ``path``; None when missing, truncated or corrupted
    (the last two with a ``CacheWarning``)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, newline, payload = data.partition(b"\n")
    fields = header.decode("ascii", "replace").split(" ")
    if not newline or len(fields) != 4 or fields[0] != MAGIC:
        warn_damaged(path, "no tiles-cache header")
        return None
    if fields[1] != str(FORMAT):
        return None  # written by another version of tiles: not damage, just not ours
    if fields[3] != str(len(payload)):
        warn_damaged(path, f"{len(payload)} bytes where the header promises {fields[3]}")
        return None
    if hashlib.sha256(payload).hexdigest() != fields[2]:
        warn_damaged(path, "checksum mismatch")
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
        warn_damaged(path, "the payload is not JSON")
        return None
