"""Run-time control flow: what the frontend's rewritten ``for``/``while``/``if`` call.

A loop or branch hands its body over as a function of the names it assigns; we
trace the body once into a region, with every tile-valued name as an explicit
carried value.  Constexpr conditions and ``tl.static_range`` run in Python, so
dead branches are never traced.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from ..core import attrs as A
from ..core import dtypes as D
from ..core.builder import current
from ..core.dtypes import DType, PointerType
from ..core.frontend import RET
from ..core.ir import Block, Value
from ..core.ops import Op
from . import semantic as S
from .carry_types import branch_type_error, carried_type, loop_type_error
from .constexpr import constexpr, unwrap
from .tensor import tensor


def global_allowed(value: Any) -> bool:
    """Triton's rule for the module globals a kernel reads: compile-time objects only."""
    return (value is None or isinstance(value, (ModuleType, DType, PointerType, constexpr))
            or callable(value))


class _Undefined:
    """A name not bound on every path (or a run-time loop's variable after the loop); any use
    explains why."""

    def __init__(self, name: str, why: str = "") -> None:
        self.name = name
        self.why = why or (f"variable {name!r} is not defined on every path through the preceding "
                           "if/loop; assign it before the branch")

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise S.error(self.why)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __getattr__ = _fail
    __truediv__ = __floordiv__ = __mod__ = __lt__ = __gt__ = __le__ = __ge__ = _fail
    __getitem__ = __call__ = __neg__ = __bool__ = __and__ = __or__ = _fail


def assigned(value: Any) -> Any:
    """What ``name = value`` binds, as Triton binds it: a Python bool, int or float becomes a scalar
    tile of its literal type (``third = 0.3333`` is float32, so ``x_fp16 * third`` is float32, and
    ``one = 1`` has ``.to``), elementwise through a tuple; tiles, constexprs and the rest unchanged."""
    if type(value) is tuple:
        return tuple(assigned(v) for v in value)
    if type(value) in (bool, int, float):
        return S.to_tensor(value)
    return value


def must_use_result(fn: Any, message: Any = True) -> Any:
    """Triton's ``triton.must_use_result``: calling ``fn`` in a kernel as a statement, dropping its
    result, is a compile error.  ``@must_use_result("why")`` adds ``why`` to the message."""
    if isinstance(fn, str):
        return lambda f: must_use_result(f, fn)
    fn._must_use_result = message
    return fn


def discarding(callee: Any) -> Any:
    """``callee`` of a call whose result the kernel drops: refused if marked ``must_use_result``."""
    mark = getattr(getattr(callee, "__func__", callee), "_must_use_result", None)
    if mark:
        name = getattr(callee, "__qualname__", None) or getattr(getattr(callee, "fn", None), "__qualname__", "")
        extra = f" {mark}" if isinstance(mark, str) else ""
        raise S.error(f"The result of {name} is not being used.{extra}")
    return callee


def lookup(scope: dict[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(scope.get(n, _Undefined(n)) for n in names)


class range:  # noqa: N801, A001
    """``range``/``tl.range`` inside kernels: a run-time loop (never unrolled while tracing).

    The keywords are Triton's scheduling options (docs/language.md says what each does
    here); they are compile-time values recorded on the loop and never change results.
    """

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,
                 loop_unroll_factor: Any = None, disallow_acc_multi_buffer: Any = False,
                 flatten: Any = False, warp_specialize: Any = False, disable_licm: Any = False) -> None:
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.options = A.Loop(
            _option_int("num_stages", num_stages, 0), _option_int("loop_unroll_factor", loop_unroll_factor, 1),
            *(_option_bool(n, v) for n, v in (("disallow_acc_multi_buffer", disallow_acc_multi_buffer),
                                              ("flatten", flatten), ("warp_specialize", warp_specialize),
                                              ("disable_licm", disable_licm))))

    @property
    def num_stages(self) -> int | None:
        return self.options.num_stages


def _option_int(name: str, value: Any, least: int) -> int | None:
    v = S.unwrap(value)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise S.error(f"tl.range({name}=...) must be a compile-time integer >= {least} or None, got {v!r}")
    return v


def _option_bool(name: str, value: Any) -> bool:
    v = S.unwrap(value)
    if isinstance(v, tensor):
        raise S.error(f"tl.range({name}=...) must be a compile-time bool, got a run-time value")
    return bool(v)


class static_range:  # noqa: N801
    """A loop unrolled while tracing; bounds must be compile-time integers."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None) -> None:
        vals = [S.unwrap(a) for a in (arg1, arg2, step) if a is not None]
        if any(not isinstance(v, int) for v in vals):
            raise S.error("tl.static_range bounds must be compile-time integers")
        self.values = builtins.range(*vals)

    def __iter__(self):
        return iter(self.values)


# ---------------------------------------------------------------- carried values


def _flatten(x: Any) -> tuple[list[Any], Any]:
    if isinstance(x, _Undefined):
        return [x], None
    if hasattr(x, "tiles_flatten"):
        leaves, aux = x.tiles_flatten()
        return leaves, (type(x), aux)
    if isinstance(x, tuple):
        parts = [_flatten(v) for v in x]
        return [leaf for p in parts for leaf in p[0]], (tuple, [(len(p[0]), p[1]) for p in parts])
    return [x], None


def _unflatten(aux: Any, leaves: list[Any]) -> Any:
    if aux is None:
        return leaves[0]
    kind, inner = aux
    if kind is tuple:
        out, i = [], 0
        for n, sub in inner:
            out.append(_unflatten(sub, leaves[i:i + n]))
            i += n
        return tuple(out)
    return kind.tiles_unflatten(inner, leaves)


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, tensor) or S.is_number(S.unwrap(x))


def _carried_type_error(name: str, before: Any, after: Any) -> Exception:
    return S.error(f"loop-carried variable {name!r} is {before!r} before the loop but {after!r} "
                   "after an iteration; give it its final structure before the loop")


def _coerce_to(value: Any, like: tensor, name: str, before: Any, body: Any, kind: str) -> tensor:
    if carried_type(value) != like.type:
        raise loop_type_error(kind, name, before, value, body)
    if isinstance(value, tensor):
        return value
    return S.const(S.unwrap(value), like.dtype, like.shape)  # type: ignore[arg-type]


class _Carried:
    """The dynamic leaves of a set of named values, and how to rebuild them."""

    def __init__(self, names: Sequence[str], values: Sequence[Any]) -> None:
        self.names = list(names)
        self.values = list(values)
        self.structure: list[tuple[Any, list[Any]]] = [_flatten(v)[::-1] for v in values]
        self.slots: list[tuple[int, int, tensor]] = []  # (name index, leaf index, initial tensor)
        for i, (_aux, leaves) in enumerate(self.structure):
            if isinstance(values[i], _Undefined):
                continue
            for j, leaf in enumerate(leaves):
                if _is_dynamic(leaf):
                    self.slots.append((i, j, S.to_tensor(leaf)))

    def initial(self) -> list[Value]:
        return [t.handle for _, _, t in self.slots]

    def rebuild(self, handles: Sequence[Value]) -> list[Any]:
        leaves = [list(ls) for _, ls in self.structure]
        for (i, j, _), h in zip(self.slots, handles):
            leaves[i][j] = S.wrap(h)
        return [self.values[i] if isinstance(self.values[i], _Undefined)
                else _unflatten(aux, leaves[i]) for i, (aux, _) in enumerate(self.structure)]

    def yields(self, new_values: Sequence[Any], body: Block, kind: str) -> list[Value]:
        out = []
        flat = [_flatten(v)[0] for v in new_values]
        for i, j, init in self.slots:
            if len(flat[i]) != len(self.structure[i][1]):
                raise _carried_type_error(self.names[i], self.values[i], new_values[i])
            out.append(_coerce_to(flat[i][j], init, self.names[i], self.structure[i][1][j], body,
                                  kind).handle)
        for i, (_, leaves) in enumerate(self.structure):
            if isinstance(self.values[i], _Undefined):
                continue
            for j, leaf in enumerate(leaves):
                if not _is_dynamic(leaf) and flat[i][j] is not leaf and flat[i][j] != leaf:
                    raise S.error(f"{self.names[i]!r} is a compile-time value ({leaf!r}) that the loop "
                                  f"changes to {flat[i][j]!r}; compile-time values cannot be loop-carried")
        return out


# ---------------------------------------------------------------- for / while / if


def for_(iterable: Any, body: Callable[..., tuple[Any, ...]], names: Sequence[str], values: Sequence[Any],
         targets: Sequence[str] = (), before: Sequence[Any] = ()) -> tuple[Any, ...]:
    """The loop's carried ``names`` after it, then its variables ``targets``: an unrolled loop's
    (``tl.static_range``, a tuple) hold the last iteration's values, or keep ``before`` when it ran
    none, as in Python; a run-time loop's are undefined (Triton's compiled code reads poison)."""
    n = len(names)
    if not isinstance(iterable, range):
        results, last = tuple(values), tuple(before)
        for item in iterable:
            out = body(item, *results)
            results, last = out[:n], out[n:]
        return results + last
    after = tuple(_Undefined(t, f"{t!r} is the variable of a run-time for loop above, read after the loop: "
                                f"Triton leaves it undefined there (its compiled code reads poison); "
                                f"keep a value of your own, e.g. assign it inside the loop body to "
                                f"another name") for t in targets)
    return _range_loop(iterable, lambda *a: body(*a)[:n], names, values) + after


def _range_loop(iterable: range, body: Callable[..., tuple[Any, ...]], names: Sequence[str],
                values: Sequence[Any]) -> tuple[Any, ...]:
    lb, ub, step = (S.unwrap(v) for v in (iterable.start, iterable.end, iterable.step))
    if all(isinstance(v, int) for v in (lb, ub, step)) and step == 0:
        raise S.error("range() step must not be zero")
    bounds = [S.to_tensor(v) for v in (lb, ub, step)]
    for b in bounds:
        if not b.dtype.is_int or b.dtype.is_bool or b.shape:
            raise S.error(f"loop bounds must be integer scalars, got {b.type}")
    ity = D.int64 if any(b.dtype.bits == 64 for b in bounds) else D.int32
    bounds = [S.cast(b, ity) for b in bounds]
    carried = _Carried(names, values)
    builder = current()
    iv = Value(bounds[0].type)
    args = [Value(h.type) for h in carried.initial()]
    with builder.region([iv, *args]) as block:
        new = body(S.wrap(iv), *carried.rebuild(args))
        block.yields = carried.yields(new, block, "loop")
    options = iterable.options if iterable.options != A.Loop() else None
    results = builder.emit(Op.FOR, [b.handle for b in bounds] + carried.initial(), options,
                           result_types=[a.type for a in args], regions=[block])
    return tuple(carried.rebuild(results))


def while_(cond: Callable[..., Any], body: Callable[..., tuple[Any, ...]], names: Sequence[str],
           values: Sequence[Any]) -> tuple[Any, ...]:
    carried = _Carried(names, values)
    builder = current()
    cargs = [Value(h.type) for h in carried.initial()]
    with builder.region(cargs) as cblock:
        c = S.to_tensor(cond(*carried.rebuild(cargs)))
        if c.shape:
            raise S.error(f"a while condition must be a scalar, got a tile of shape {list(c.shape)}")
        c = S.truth(c)
        cblock.yields = [c.handle]
    bargs = [Value(h.type) for h in carried.initial()]
    with builder.region(bargs) as bblock:
        new = body(*carried.rebuild(bargs))
        bblock.yields = carried.yields(new, bblock, "loop")
    results = builder.emit(Op.WHILE, carried.initial(), result_types=[a.type for a in bargs],
                           regions=[cblock, bblock])
    return tuple(carried.rebuild(results))


def _merge(name: str, a: Any, b: Any) -> tuple[str, Any, Any]:
    """('same', v) when both branches agree statically, ('dyn', ta, tb) otherwise."""
    if a is b:
        return ("same", a, None)
    if isinstance(a, _Undefined) or isinstance(b, _Undefined):
        return ("same", _Undefined(name), None)
    if not _is_dynamic(a) or not _is_dynamic(b):
        if not _is_dynamic(a) and not _is_dynamic(b) and a == b:
            return ("same", a, None)
        if name == RET and (a is None or b is None):
            raise S.error("a function returns a value on one path of a run-time if and nothing on the "
                          "other; return a value on every path")
        raise S.error(f"{name!r} gets different compile-time values in the two branches of a "
                      f"run-time if ({a!r} and {b!r})")
    return ("dyn", a, b)


def if_(cond: Any, then: Callable[..., tuple[Any, ...]], otherwise: Callable[..., tuple[Any, ...]],
        names: Sequence[str], values: Sequence[Any]) -> tuple[Any, ...]:
    c = S.unwrap(cond)
    if not isinstance(c, tensor):
        return (then if c else otherwise)(*values)
    if c.shape and c.numel == 1:  # Triton takes a one-element tile, with a warning
        warnings.warn(f"If conditional called with multidimensional Tensor instead of scalar (shape "
                      f"{list(c.shape)}); please use \"if (...).item()\" instead", UserWarning, stacklevel=2)
        c = S.reshape(c, ())
    if c.shape:
        raise S.error(f"an if condition must be a scalar, got a tile of shape {list(c.shape)}; "
                      "use tl.where for elementwise choices")
    c = S.truth(c)
    builder = current()
    with builder.region() as tblock:
        tvals = then(*values)
    with builder.region() as eblock:
        evals = otherwise(*values)
    out: list[Any] = []
    plan: list[tuple[int, Any, list[tuple[Any, ...]]]] = []
    for i, name in enumerate(names):
        fa, fb = _flatten(tvals[i]), _flatten(evals[i])
        if fa[1] != fb[1] or len(fa[0]) != len(fb[0]):
            out.append(_merge(name, tvals[i], evals[i])[1])
            continue
        out.append(None)
        plan.append((i, fa[1], [_merge(name, la, lb) for la, lb in zip(fa[0], fb[0])]))
    then_yields, else_yields = [], []
    for i, _aux, slots in plan:
        initial = _flatten(values[i])[0]
        for k, slot in enumerate(slots):
            if slot[0] != "dyn":
                continue
            _, a, b = slot
            if carried_type(a) != carried_type(b):
                init = initial[k] if k < len(initial) else None
                raise branch_type_error(names[i], a, b, init, (tblock, eblock))
            with _in_block(builder, tblock):
                then_yields.append(_materialize(a, b).handle)
            with _in_block(builder, eblock):
                else_yields.append(_materialize(b, a).handle)
    tblock.yields, eblock.yields = then_yields, else_yields
    results = list(builder.emit(Op.IF, [c.handle], result_types=[v.type for v in then_yields],
                                regions=[tblock, eblock]))
    for i, aux, slots in plan:
        leaves = [slot[1] if slot[0] == "same" else S.wrap(results.pop(0)) for slot in slots]
        out[i] = _unflatten(aux, leaves)
    return tuple(out)


@contextmanager
def _in_block(builder: Any, block: Any) -> Iterator[None]:
    builder.blocks.append(block)
    try:
        yield
    finally:
        builder.blocks.pop()


def _materialize(mine: Any, other: Any) -> tensor:
    """This branch's value as a tile (both branches' values already have the same type)."""
    if isinstance(mine, tensor):
        return mine
    if isinstance(other, tensor):
        return S.const(S.unwrap(mine), other.dtype, other.shape)  # type: ignore[arg-type]
    return S.to_tensor(mine)


# ---------------------------------------------------------------- boolean helpers


def not_(x: Any) -> Any:
    if isinstance(x, tensor):
        if x.dtype == D.int1 or isinstance(x.dtype, PointerType):
            return S.invert(S.truth(x))
        return S.compare("eq", x, 0)
    return not x


def and_(a: Any, b: Callable[[], Any]) -> Any:
    if isinstance(a, tensor):
        return S.bitwise("and", _as_bool(a), _as_bool(b()))
    if not a:
        return a
    v = b()
    return _as_bool(v) if isinstance(v, tensor) else v


def or_(a: Any, b: Callable[[], Any]) -> Any:
    if isinstance(a, tensor):
        return S.bitwise("or", _as_bool(a), _as_bool(b()))
    if a:
        return a
    v = b()
    return _as_bool(v) if isinstance(v, tensor) else v


def is_(a: Any, b: Any) -> constexpr:
    """``a is b`` in a kernel: identity of the values inside constexprs, a compile-time answer (as
    Triton's code generator: ``dtype is tl.float32`` holds for a dtype passed as a constexpr)."""
    return constexpr(unwrap(a) is unwrap(b))


def is_not(a: Any, b: Any) -> constexpr:
    """``a is not b`` in a kernel (see ``is_``)."""
    return constexpr(unwrap(a) is not unwrap(b))


def _as_bool(x: Any) -> tensor:
    return S.truth(x)


def ifexp(c: Any, a: Callable[[], Any], b: Callable[[], Any]) -> Any:
    """``a if c else b``.  A run-time scalar condition evaluates only the branch taken, as Triton's
    (an scf.if): ``0 if i == 0 else tl.load(p + i - 1)`` never loads p[-1].  A tile condition
    chooses elementwise (tl.where), with both branches evaluated."""
    cond = S.unwrap(c)
    if isinstance(cond, tensor) and not cond.shape:
        name = "the conditional expression (x if c else y)"
        return if_(cond, lambda _: (a(),), lambda _: (b(),), (name,), (None,))[0]
    if isinstance(cond, tensor):
        return S.where(cond, a(), b())
    return a() if cond else b()


def builtin_min(*args: Any, **kwargs: Any) -> Any:
    if len(args) >= 2 and any(isinstance(a, tensor) for a in args):
        out = args[0]
        for a in args[1:]:
            out = S.minmax("min", out, a)
        return out
    return builtins.min(*args, **kwargs)


def builtin_max(*args: Any, **kwargs: Any) -> Any:
    if len(args) >= 2 and any(isinstance(a, tensor) for a in args):
        out = args[0]
        for a in args[1:]:
            out = S.minmax("max", out, a)
        return out
    return builtins.max(*args, **kwargs)


def assert_(cond: Any, msg: Any) -> None:
    if isinstance(cond, tensor):
        from .core import device_assert
        device_assert(cond, str(msg))
    elif not cond:
        raise S.error(f"assertion failed: {msg}")


def builtin_print(*args: Any, **kwargs: Any) -> None:
    if any(isinstance(a, tensor) for a in args):
        from .core import device_print
        prefix = " ".join(str(a) for a in args if not isinstance(a, tensor))
        device_print(prefix, *[a for a in args if isinstance(a, tensor)])
    else:
        print(*args, **kwargs)
