"""Building IR while a kernel is traced: the block stack and source locations."""

from __future__ import annotations

import linecache
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import CodeType
from typing import Any

from .errors import CompilationError
from .ir import UNKNOWN_LOC, Block, Instr, Loc, TileType, Value
from .ops import Op
from .typerules import IRTypeError, infer

# Code objects of rewritten kernels (and their nested helpers): frames running one
# of these are user code, which is where error locations point.
# Only ever grows; readers test membership without the lock (safe under the GIL).
KERNEL_CODES: set[CodeType] = set()
# the same codes by id (kept alive here, so an id stays theirs): a code object hashes its whole
# contents, and every traced instruction looks up the frames above it
_KERNEL_CODE_IDS: dict[int, CodeType] = {}
_codes_lock = threading.Lock()


def register_code(code: CodeType) -> None:
    with _codes_lock:
        _register(code)


def _register(code: CodeType) -> None:
    KERNEL_CODES.add(code)
    _KERNEL_CODE_IDS[id(code)] = code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            _register(const)


# (code's id, line) -> Loc: every instruction traced asks, most from a line seen before.  (The
# function named is the code's own, or for a loop or branch body the function it is written in:
# the first kernel frame above that is not a body, always the same for one code.)
_LOCS: dict[tuple[int, int], Loc] = {}


def user_loc(frame: Any = None) -> Loc:
    """The location of the innermost kernel frame on the current stack."""
    f = frame or sys._getframe(1)
    ids = _KERNEL_CODE_IDS
    while f is not None:
        code = f.f_code
        if id(code) in ids:
            line = f.f_lineno or 0
            loc = _LOCS.get((id(code), line))
            if loc is None:
                name = code.co_name
                if name.startswith("__tiles_"):
                    name = _outer_name(f)
                loc = Loc(code.co_filename, line, name, linecache.getline(code.co_filename, line).strip())
                if len(_LOCS) < 65536:
                    _LOCS[(id(code), line)] = loc
            return loc
        f = f.f_back
    return UNKNOWN_LOC


def _outer_name(frame: Any) -> str:
    f = frame
    while f is not None:
        if id(f.f_code) in _KERNEL_CODE_IDS and not f.f_code.co_name.startswith("__tiles_"):
            return f.f_code.co_name
        f = f.f_back
    return frame.f_code.co_name


def tb_loc(tb: Any) -> Loc:
    """The innermost kernel location in a traceback."""
    found = UNKNOWN_LOC
    while tb is not None:
        if tb.tb_frame.f_code in KERNEL_CODES:
            code = tb.tb_frame.f_code
            line = tb.tb_lineno
            name = code.co_name if not code.co_name.startswith("__tiles_") else _outer_name(tb.tb_frame)
            found = Loc(code.co_filename, line, name, linecache.getline(code.co_filename, line).strip())
        tb = tb.tb_next
    return found


class Builder:
    """Appends instructions to the innermost open block."""

    def __init__(self) -> None:
        self.blocks: list[Block] = [Block()]

    @property
    def block(self) -> Block:
        return self.blocks[-1]

    def emit(self, op: Op, operands: Sequence[Value], attrs: Any = None,
             result_types: Sequence[TileType] | None = None,
             regions: Sequence[Block] = ()) -> tuple[Value, ...]:
        if result_types is None:
            try:
                result_types = infer(op, [v.type for v in operands], attrs)
            except IRTypeError as e:
                raise CompilationError(str(e), user_loc(), cause=ValueError(str(e)))  # noqa: B904  (__cause__ is the bare error)
        results = (Value(result_types[0]),) if len(result_types) == 1 else tuple(Value(t) for t in result_types)
        self.blocks[-1].instrs.append(Instr(op, tuple(operands), results, attrs, tuple(regions), user_loc()))
        return results

    def emit1(self, op: Op, operands: Sequence[Value], attrs: Any = None,
              result_type: TileType | None = None) -> Value:
        types = None if result_type is None else (result_type,)
        return self.emit(op, operands, attrs, types)[0]

    @contextmanager
    def region(self, args: Sequence[Value] = ()) -> Iterator[Block]:
        block = Block(list(args))
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()


class _TracingState(threading.local):
    """Each thread traces with its own stack of builders, so kernels compile concurrently."""

    def __init__(self) -> None:
        self.builders: list[Builder] = []


_state = _TracingState()


def current() -> Builder:
    builders = _state.builders
    if not builders:
        raise CompilationError("tiles.language functions can only be called inside a @tiles.jit "
                               "kernel that is being compiled or launched", UNKNOWN_LOC)
    return builders[-1]


def is_tracing() -> bool:
    return bool(_state.builders)


@contextmanager
def tracing(builder: Builder) -> Iterator[Builder]:
    builders = _state.builders
    builders.append(builder)
    try:
        yield builder
    finally:
        builders.pop()
