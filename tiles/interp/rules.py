"""INTERP_RULES[op](ctx, instr, operand arrays) -> result arrays, for every op
that is not control flow (the walker in executor.py runs FOR/WHILE/IF).

Arrays carry a leading program axis of length ``ctx.P`` or 1 (uniform).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import semantics
from ..core.attrs import Arange, Atomic, Const, Descriptor, Load, Store
from ..core.dtypes import FP8E4B15_STORAGE, DType, PointerType
from ..core.errors import KernelRuntimeError
from ..core.ir import Instr
from ..core.ops import Op
from .context import Ctx
from .memory import DeferredPtr, addresses
from .reductions import REDUCTION_RULES

Rule = Callable[[Ctx, Instr, list[np.ndarray]], Sequence[np.ndarray]]
INTERP_RULES: dict[Op, Rule] = {}


def _rule(*ops: Op) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in ops:
            INTERP_RULES[op] = fn
        return fn
    return register


def lead_broadcast(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays with one common leading (program) length."""
    n = max(a.shape[0] for a in arrays)
    return [a if a.shape[0] == n else np.broadcast_to(a, (n, *a.shape[1:])) for a in arrays]


# ---------------------------------------------------------------- creation


def _cached(ctx: Ctx, instr: Instr, make: Callable[[], np.ndarray]) -> tuple[np.ndarray, ...]:
    """``make()``'s value, made once per kernel (``Plan.constants``): read-only, every launch shares it."""
    hit = ctx.launch.cache.get(instr)
    if hit is None:
        value = make()
        value.flags.writeable = False
        hit = ctx.launch.cache[instr] = (value,)
    return hit


@_rule(Op.CONST)
def _const(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Const = instr.attrs

    def make() -> np.ndarray:
        one = semantics.constant(a.value, a.dtype)
        return np.broadcast_to(one.reshape((1,) * (len(a.shape) + 1)), (1, *a.shape))
    return _cached(ctx, instr, make)


@_rule(Op.ARANGE)
def _arange(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Arange = instr.attrs
    return _cached(ctx, instr, lambda: np.arange(a.start, a.end, dtype=np.int32)[None])


@_rule(Op.PROGRAM_ID)
def _program_id(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    return (ctx.progs.ids[instr.attrs.axis],)


@_rule(Op.NUM_PROGRAMS)
def _num_programs(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    return (np.array([ctx.progs.grid[instr.attrs.axis]], np.int32),)


# ---------------------------------------------------------------- elementwise


def _elementwise_rule(impl: semantics.Impl) -> Rule:
    def rule(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
        return (impl(instr.attrs, args, instr.results[0].type),)  # the walker set errstate
    return rule


for _op, _impl in semantics.ELEMENTWISE_IMPL.items():
    INTERP_RULES[_op] = _elementwise_rule(_impl)


@_rule(Op.INT_TO_PTR)
def _int_to_ptr(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a = args[0] if args[0].dtype == np.int64 else args[0].astype(np.int64)
    return (ctx.launch.memory.resolve(a, instr.loc),)


# ---------------------------------------------------------------- shape


@_rule(Op.BROADCAST)
def _broadcast(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    (x,) = args
    shape = instr.attrs.shape
    if x.ndim == 1 and shape:
        x = x.reshape((x.shape[0],) + (1,) * len(shape))
    full = (x.shape[0], *shape)
    if x.shape == full:
        return (x,)
    if x.shape[0] * _prod(shape) <= SMALL_BROADCAST and not isinstance(instr.results[0].type.dtype, PointerType):
        out = np.empty(full, x.dtype)  # a small copy costs less than np.broadcast_to's view
        out[...] = x
        return (out,)
    return (np.broadcast_to(x, full),)  # pointers stay views: accesses check a broadcast base once


SMALL_BROADCAST = 4096


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@_rule(Op.RESHAPE)
def _reshape(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    (x,) = args
    return (x.reshape((x.shape[0], *instr.attrs.shape)),)


@_rule(Op.PERMUTE)
def _permute(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    (x,) = args
    return (x.transpose((0, *(o + 1 for o in instr.attrs.order))),)


@_rule(Op.JOIN)
def _join(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    return (np.stack(lead_broadcast(*args), axis=-1),)


@_rule(Op.SPLIT)
def _split(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    (x,) = args
    return x[..., 0], x[..., 1]


@_rule(Op.CAT)
def _cat(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    return (np.concatenate(lead_broadcast(*args), axis=1),)


# ---------------------------------------------------------------- memory


@_rule(Op.LOAD)
def _load(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Load = instr.attrs
    ptr = args[0]
    mask = args[1] if a.masked else None
    other = args[1 + a.masked] if a.has_other else None
    elem = instr.results[0].type.dtype
    return (ctx.launch.memory.load(ptr, mask, other, elem, ctx.site(instr, "load")),)


@_rule(Op.STORE)
def _store(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Store = instr.attrs
    mask = args[2] if a.masked else None
    elem = instr.operands[1].type.dtype
    ctx.launch.memory.store(args[0], args[1], mask, elem, ctx.site(instr, "store"))
    return ()


def _descriptor_tile(instr: Instr, args: list[np.ndarray], elem: DType) -> tuple[DeferredPtr, np.ndarray]:
    """The addresses of a descriptor access's block (``base + sum(int64(off + i) * stride)``, as
    DESC_LOAD's doc says) and its in-bounds mask ``0 <= off + i < shape`` on every bounded axis."""
    a: Descriptor = instr.attrs
    n = a.ndim
    base = addresses(args[0])
    shape, strides, offsets = args[1:1 + n], args[1 + n:1 + 2 * n], args[1 + 2 * n:1 + 3 * n]
    lead = max(x.shape[0] for x in (base, *shape, *strides, *offsets))
    total = np.zeros((lead,) + (1,) * n, np.int64)
    mask = np.ones((lead,) + (1,) * n, np.bool_)
    for d, size in enumerate(a.block_shape):
        view = (-1,) + tuple(size if i == d else 1 for i in range(n))
        col = (-1,) + (1,) * n
        idx = np.add(offsets[d].astype(np.int32).reshape(col), np.arange(size, dtype=np.int32).reshape(view))
        wide = idx.astype(np.int64)
        total = total + wide * strides[d].astype(np.int64).reshape(col)
        if a.is_bounded(d):
            mask = mask & (idx >= 0) & (wide < shape[d].astype(np.int64).reshape(col))
    full = (lead, *a.block_shape)
    size = np.dtype(np.uint8).itemsize if elem.is_bool else elem.np.itemsize
    return (DeferredPtr(base.reshape((-1,) + (1,) * n), np.broadcast_to(total, full), size),
            np.broadcast_to(mask, full))


@_rule(Op.DESC_LOAD)
def _desc_load(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    elem = instr.results[0].type.dtype
    assert isinstance(elem, DType)
    ptrs, mask = _descriptor_tile(instr, args, elem)
    what = "descriptor load" if instr.attrs.bounded is None else "block pointer load"
    return (ctx.launch.memory.load(ptrs, mask, None, elem, ctx.site(instr, what)),)


@_rule(Op.DESC_STORE)
def _desc_store(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    elem = instr.operands[-1].type.dtype
    assert isinstance(elem, DType)
    ptrs, mask = _descriptor_tile(instr, args, elem)
    ctx.launch.memory.store(ptrs, args[-1], mask, elem, ctx.site(instr, "descriptor store"))
    return ()


@_rule(Op.ATOMIC)
def _atomic(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    a: Atomic = instr.attrs
    mask = args[2] if a.masked else None
    elem = instr.results[0].type.dtype
    assert isinstance(elem, DType)
    site = ctx.site(instr, f"atomic {a.kind}")
    return (ctx.launch.memory.atomic(a.kind, args[0], args[1], None, mask, elem, a.result_used, site),)


@_rule(Op.ATOMIC_CAS)
def _atomic_cas(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    ptr, cmp, value = args
    elem = instr.results[0].type.dtype
    assert isinstance(elem, DType)
    site = ctx.site(instr, "atomic_cas")
    return (ctx.launch.memory.atomic("cas", ptr, value, cmp, None, elem, True, site),)


# ---------------------------------------------------------------- debug


@_rule(Op.DEVICE_ASSERT)
def _device_assert(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    cond = args[0]
    if cond.all():
        return ()
    failed = np.logical_not(cond).reshape(cond.shape[0], -1).any(axis=1)
    program = int(np.argmax(failed)) if cond.shape[0] > 1 else 0
    text = instr.attrs.text if instr.attrs is not None else ""
    raise KernelRuntimeError(f"device_assert failed in kernel '{ctx.launch.kernel.name}', "
                             f"{ctx.progs.describe(program)}: {text}", instr.loc)


def _format(v: np.ndarray, hex_: bool) -> str:
    if v.dtype == FP8E4B15_STORAGE:  # raw bytes: the bits with hex=True, else the values
        v = v.view(np.uint8) if hex_ else semantics.widen(v)
    if hex_ and v.dtype.kind in "iu":
        return np.array2string(np.asarray(v), formatter={"int": lambda i: hex(int(i))})
    return str(v) if v.ndim else str(v.item())


@_rule(Op.DEVICE_PRINT)
def _device_print(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    text = instr.attrs.text if instr.attrs is not None else ""
    hex_ = bool(getattr(instr.attrs, "hex", False))
    for i in range(ctx.P):
        x, y, z = ctx.progs.pid(i)
        parts = [_format(v[i if v.shape[0] > 1 else 0], hex_) for v in args]
        print(f"pid ({x}, {y}, {z}) {text}{' '.join(parts)}", file=sys.stdout)
    sys.stdout.flush()
    return ()


@_rule(Op.BARRIER)
def _barrier(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Sequence[np.ndarray]:
    return ()


INTERP_RULES.update(REDUCTION_RULES)


def run_rule(ctx: Ctx, instr: Instr, args: list[np.ndarray]) -> Any:
    return INTERP_RULES[instr.op](ctx, instr, args)
