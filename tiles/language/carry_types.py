"""Triton's rule for values that a loop carries or an ``if`` merges: the type never changes.

Triton turns every Python number assigned in a kernel into a scalar tile of its
literal type (``0`` is int32, ``0.0`` float32, ``True`` int1, ``2**40`` int64), and
refuses a loop-carried or branch-merged variable whose type (dtype and shape)
differs between its definitions.  tiles keeps Python numbers unmaterialized while
tracing, so a number is compared by that same literal type.  The only "promotion"
this allows is Triton's own: a number whose literal type equals the tile's
(``acc = 0`` carried as an int32 sum).
"""

from __future__ import annotations

from typing import Any

from ..core import dtypes as D
from ..core.errors import CompilationError
from ..core.ir import Block, TileType, Value
from . import semantic as S
from .tensor import tensor


def carried_type(x: Any) -> TileType:
    """The type Triton gives a carried value: a tile's own, or a number's literal type."""
    if isinstance(x, tensor):
        return x.type
    return TileType(D.literal_type(S.unwrap(x)), ())


def _python_spelling(t: TileType) -> str:
    dtype = t.dtype
    if isinstance(dtype, D.PointerType):
        return "a pointer of the same type"
    shape = list(t.shape)
    fix = f"tl.zeros({shape}, dtype=tl.{dtype.name})"
    if not shape and dtype in (D.float32, D.int32):
        fix += f" or {'0.0' if dtype == D.float32 else '0'}"
    return fix


def _defined_at(value: Any, block: Block | None) -> int:
    """The kernel line of the instruction in ``block`` that computed ``value`` (0 if unknown)."""
    if block is None or not isinstance(value, tensor):
        return 0
    handle: Value = value.handle
    for instr in reversed(block.instrs):
        if handle in instr.results:
            return instr.loc.line
    return 0


def loop_type_error(kind: str, name: str, before: Any, after: Any,
                    body: Block | None = None) -> CompilationError:
    b, a = carried_type(before), carried_type(after)
    where = _defined_at(after, body)
    at = f" (line {where})" if where else ""
    return S.error(f"{kind}-carried variable {name!r} is {b} before the {kind} but becomes {a} "
                   f"inside it{at}; a carried variable keeps one type (Triton's rule). Give it "
                   f"its final type before the {kind}: {name} = {_python_spelling(a)}, or convert "
                   f"the new value with .to(tl.{_dtype_name(b)})")


def branch_type_error(name: str, then: Any, otherwise: Any, initial: Any,
                      blocks: tuple[Block, Block]) -> CompilationError:
    t, e = carried_type(then), carried_type(otherwise)
    if otherwise is initial or then is initial:
        before, after, block = (t, e, blocks[1]) if then is initial else (e, t, blocks[0])
        changed = otherwise if then is initial else then
        where = _defined_at(changed, block)
        at = f" (line {where})" if where else ""
        return S.error(f"{name!r} is {before} before the if but one branch makes it {after}{at}; "
                       f"a variable merged by an if keeps one type (Triton's rule). Give it its final "
                       f"type before the if: {name} = {_python_spelling(after)}, or convert the new "
                       f"value with .to(tl.{_dtype_name(before)})")
    lines = [_defined_at(v, blk) for v, blk in zip((then, otherwise), blocks)]
    at = "".join(f" ({side} at line {ln})" for side, ln in zip(("then", "else"), lines) if ln)
    return S.error(f"{name!r} is {t} in the then-branch but {e} in the else-branch{at}; both branches "
                   f"must give it the same type and shape (Triton's rule): convert one with "
                   f".to(tl.{_dtype_name(t)}) or start from {_python_spelling(t)}")


def _dtype_name(t: TileType) -> str:
    return t.dtype.name if isinstance(t.dtype, D.DType) else "pointer_type(...)"
