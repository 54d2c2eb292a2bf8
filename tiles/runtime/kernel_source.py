"""Where a kernel's source text comes from when it is not (only) its file.

tiles rewrites a kernel from its source, which ``inspect`` finds through the function's file or
``linecache`` (notebook cells: IPython registers each cell there).  Two more cases, as in Triton:

- **``exec()`` without a ``linecache`` entry** (Triton's unit tests build kernels so): the text
  is recovered when ``@jit`` runs, from the frame that called ``exec``: a string among its local
  variables that compiles to exactly the code being executed (code objects compare equal only
  when their bytecode, constants and names agree), or the ``source`` CPython keeps for
  ``exec`` of a code object compiled from text with a ``linecache`` entry.
- **Edited source** (``kernel.src = ...`` or Triton's ``kernel._unsafe_update_src(...)``).

Either way the text is registered in ``linecache`` under a name of its own (``<kernel X from
exec #n>``) so that errors show its lines, and the JITFunction rewrites it instead of its file.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import re
import sys
import textwrap
import types
from dataclasses import dataclass
from typing import Any

_counter = itertools.count(1)


@dataclass(frozen=True)
class KernelSource:
    """A kernel's text (from its ``def`` line on), the line number of that ``def`` in
    ``filename``, and the ``linecache`` name its lines are registered under."""

    text: str
    first_line: int
    filename: str


def def_text(source: str) -> str:
    """``source`` dedented and from its ``def`` line on (decorators dropped): Triton's ``.src``."""
    text = textwrap.dedent(source)
    found = re.search(r"^(async\s+)?def\s+\w+\s*\(", text, re.MULTILINE)
    return text[found.start():] if found else text


def register(text: str, first_line: int, label: str) -> KernelSource:
    """Register ``text`` (whose ``def`` is at ``first_line``) in linecache under a fresh name."""
    filename = f"<{label} #{next(_counter)}>"
    lines = ["\n"] * (first_line - 1) + text.splitlines(keepends=True)
    linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return KernelSource(text, first_line, filename)


def _def_line(code: types.CodeType, text: str) -> int:
    """The line of ``def`` in ``text``'s numbering, for a function whose code starts at
    ``code.co_firstlineno`` (which points at its first decorator)."""
    lines = text.splitlines()
    start = code.co_firstlineno
    for n in range(start, len(lines) + 1):
        if re.match(r"\s*(async\s+)?def\s", lines[n - 1]):
            return n
    return start


def _function_in(module_code: types.CodeType, fn: types.FunctionType) -> bool:
    """Whether ``fn``'s code is ``module_code`` or nested in it."""
    pending = [module_code]
    while pending:
        code = pending.pop()
        if code == fn.__code__:
            return True
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return False


def _candidates(frame: types.FrameType) -> list[str]:
    values = list(frame.f_locals.values())
    values += [v for v in frame.f_globals.values() if isinstance(v, str) and "def " in v]
    return [v for v in values if isinstance(v, str) and "def " in v]


def recover(fn: types.FunctionType) -> KernelSource | None:
    """The source of ``fn``, made by ``exec()`` of a string the calling code still holds while
    ``@jit`` runs on it; None if it cannot be found for sure."""
    filename = fn.__code__.co_filename
    frame = sys._getframe(1)
    while frame is not None:
        # the frame running the exec'd module code, then the one that called exec
        if frame.f_code.co_filename == filename and frame.f_code.co_name == "<module>" and frame.f_back:
            module_code, caller = frame.f_code, frame.f_back
            for text in _candidates(caller):
                try:
                    compiled = compile(text, filename, "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    continue
                if compiled == module_code and _function_in(compiled, fn):
                    first = _def_line(fn.__code__, text)
                    body = "".join(text.splitlines(keepends=True)[first - 1:])
                    return register(def_text(body), first, f"kernel {fn.__name__} from exec")
            return None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def file_source(fn: Any) -> KernelSource | None:
    """The source ``inspect`` finds for ``fn`` (file or linecache), or None."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    return KernelSource("".join(lines), first, filename)


def edited(fn: Any, text: str, first_line: int) -> KernelSource:
    """The source ``text`` given for ``fn`` by ``kernel.src = text``."""
    return register(def_text(text), first_line, f"kernel {fn.__name__}: edited src")


def def_line(fn: Any) -> int:
    """The line of ``fn``'s ``def`` (after its decorators) in its file."""
    found = file_source(fn)
    if found is None:
        return int(fn.__code__.co_firstlineno)
    for i, line in enumerate(found.text.splitlines()):
        if re.match(r"\s*(async\s+)?def\s", line):
            return found.first_line + i
    return found.first_line


def unfound(fn: Any) -> KernelSource | None:
    """For a function ``inspect`` cannot read (made by ``exec``), its recovered source; None when
    its file or linecache has it, or when it cannot be recovered (the frontend then says so)."""
    filename = fn.__code__.co_filename
    if filename in linecache.cache or not (filename.startswith("<") and filename.endswith(">")):
        return None
    return recover(fn)
