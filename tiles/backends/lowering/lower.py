"""The walker: tile IR in, per-thread calls on an ``Emitter`` out.

Every IR value becomes a list of handles, one per slot of its layout (see
``layout.py``).  Rules live in the registry ``RULES[op]``; this module holds the
registry, the walker, the index arithmetic every rule shares, and the creation,
elementwise and control flow rules.  Memory, layout changes, reductions, sorting and
tensor cores register theirs from their own modules, which import this one; none of
them is imported here (``entry.py`` imports them all, in order, and runs the walker).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core import attrs as A  # noqa: N812
from ...core import dtypes as D  # noqa: N812
from ...core import mathfns, semantics
from ...core.dtypes import DType, PointerType, ScalarType
from ...core.errors import UnsupportedError
from ...core.ir import Block, Instr, Kernel, Value
from ...core.ops import BINARY_ARITH, COMPARISON, MATH, Op
from ...core.origins import PointerOrigins, atomically_written
from ..base import Options
from .axisinfo import access_width, analyze, slot_representatives
from .emitter import Emitter, Handle
from .exchanges import Exchanges
from .hazards import GlobalHazards
from .layout import Layout, choose_layout

Index = int | Handle  # a Python int is a compile-time index, folded before it reaches the emitter
Rule = Callable[["Lowering", Instr], list[list[Handle]]]
RULES: dict[Op, Rule] = {}


def rule(*ops: Op) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn
    return register


FOLD: dict[Op, Callable[[int, int], int]] = {  # Lowering.iop on compile-time indices
    Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
    Op.IDIV: semantics.trunc_div, Op.MOD: semantics.trunc_mod,  # the IR's truncating division, not Python's floor
}


def _is(x: Index, n: int) -> bool:
    return isinstance(x, int) and x == n


class Lowering:
    """One kernel lowered onto one emitter with ``threads`` threads per program."""

    def __init__(self, kernel: Kernel, emitter: Emitter, threads: int, options: Options) -> None:
        if threads & (threads - 1):
            raise UnsupportedError(f"threads per program must be a power of two, got {threads}",
                                   kernel.loc)
        self.kernel = kernel
        self.e = emitter
        self.threads = threads
        self.launch_threads = threads  # threads per program at launch (a producer warp adds to them)
        self.options = options
        self.not_applied: list[str] = []  # options the code does not follow, each with its file:line
        self.variants: set[str] = set()  # optional code shapes chosen that a backend may lower without
        self.env: dict[Value, list[Handle]] = {}
        # a program's ids and the launch's program counts per axis, where the code computes them
        # (cuda/hopper/persistent.py: one launched program runs several of the kernel's programs)
        self.program_ids: list[Handle] | None = None
        self.program_counts: list[Handle] | None = None
        self.local_bytes = 0
        self.exchanges = Exchanges.of(emitter)  # where exchanges through local memory go; their barriers
        self._scopes: list[dict[Any, Handle]] = [{}]
        self.info = analyze(kernel)
        self.max_vec = _widest_chunk(kernel)
        if not _any_vector_access(kernel, self.info, threads, self.max_vec, emitter):
            self.max_vec = 1  # chunks of one element: scalar accesses of a warp stay on consecutive addresses
        self._definitions: dict[Value, Instr] | None = None
        # the pointer parameters the kernel's own atomics change (memory other programs write)
        has_atomics = any(i.op in (Op.ATOMIC, Op.ATOMIC_CAS) for i in kernel.walk())
        self.origins = PointerOrigins(kernel) if has_atomics else None
        self.atomic_params = atomically_written(kernel, self.origins) if self.origins is not None else frozenset()
        # program barriers between threads' global loads and stores of one parameter (hazards.py)
        self.hazards = GlobalHazards(kernel, self.origins) if emitter.orders_global_hazards else None

    # ------------------------------------------------------------ driver
    def run(self) -> str:
        """The emitter's code for the whole kernel; ``local_bytes`` is then final."""
        params = [(p.name, p.value.type.dtype) for p in self.kernel.params]
        handles = self.e.begin_kernel(self.kernel.name, params, self.launch_threads)
        self.tid = self.e.thread_id()
        for p, h in zip(self.kernel.params, handles):
            self.env[p.value] = [h]
        self.begin_body()
        self.lower_body()
        return self.e.finish(self.local_bytes)

    def begin_body(self) -> None:
        """Code that goes before the kernel's body (a subclass's)."""

    def lower_body(self) -> None:
        """The kernel's body (a subclass may run it more than once per launched program)."""
        self.lower_block(self.kernel.body)

    def lower_block(self, block: Block) -> list[list[Handle]]:
        for instr in block.instrs:
            outs = self.lower_instr(instr)
            for v, hs in zip(instr.results, outs):
                if hs is None:  # held only in another layout (mma/: MMA accumulators)
                    continue
                assert len(hs) == self.layout(v).per_thread, (instr.op, v.type)
                self.env[v] = hs
        return [self.env[y] for y in block.yields]

    def lower_instr(self, instr: Instr) -> list[list[Handle]]:
        """The handles of each result of ``instr`` (a subclass may dispatch to its own rules first)."""
        fn = RULES.get(instr.op)
        if fn is None:
            raise UnsupportedError(f"op {instr.op.value} has no GPU lowering", instr.loc)
        return fn(self, instr)

    def in_scope(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a region callback so handles it caches do not leak out of its scope."""
        def scoped(*args: Any) -> Any:
            self._scopes.append({})
            try:
                return fn(*args)
            finally:
                self._scopes.pop()
        return scoped

    # ------------------------------------------------------------ layouts and indices
    def layout(self, v: Value | tuple[int, ...]) -> Layout:
        shape = v if isinstance(v, tuple) else v.type.shape
        return choose_layout(shape, self.threads, self.max_vec)

    def const(self, value: bool | int | float, dtype: DType) -> Handle:
        return self.e.constant(value, dtype)

    def idx(self, x: Index) -> Handle:
        return self.const(x, D.int32) if isinstance(x, int) else x

    def iop(self, op: Op, a: Index, b: Index) -> Index:
        """int32 index arithmetic, folded when both sides are known."""
        if isinstance(a, int) and isinstance(b, int):
            return FOLD[op](a, b)
        if _is(b, 0) and op in (Op.ADD, Op.SUB) or _is(b, 1) and op in (Op.MUL, Op.IDIV):
            return a
        if _is(a, 0) and op is Op.ADD or _is(a, 1) and op is Op.MUL:
            return b
        if op is Op.MUL and (_is(a, 0) or _is(b, 0)) or op is Op.MOD and _is(b, 1):
            return 0
        return self.e.binary(op, self.idx(a), self.idx(b), D.int32)

    def definitions(self) -> dict[Value, Instr]:
        """The instruction that defines each value of the kernel."""
        if self._definitions is None:
            self._definitions = {v: instr for instr in self.kernel.walk() for v in instr.results}
        return self._definitions

    def cached(self, key: Any, make: Callable[[], Handle]) -> Handle:
        for scope in reversed(self._scopes):
            if key in scope:
                return scope[key]
        h = self._scopes[-1][key] = make()
        return h

    def chunk(self, layout: Layout, j: int) -> Index:
        """The chunk slot ``j`` of this thread holds."""
        r, _ = layout.slot(j)
        if layout.round_is_full(r):
            return self.iop(Op.ADD, r * layout.threads, self.tid)
        return self.cached(("chunk", layout, r), lambda: self.iop(
            Op.MOD, self.iop(Op.ADD, r * layout.threads, self.tid), layout.nchunks))

    def flat_index(self, layout: Layout, j: int) -> Index:
        """Row-major index of the element in slot ``j`` of this thread."""
        if not layout.shape:
            return 0
        _, k = layout.slot(j)
        return self.cached(("flat", layout, j), lambda: self.iop(
            Op.ADD, self.iop(Op.MUL, self.chunk(layout, j), layout.vec), k))

    def owner(self, layout: Layout, j: int) -> Handle | None:
        """int1: this thread is the one that writes slot ``j`` (None: always)."""
        r, _ = layout.slot(j)
        if layout.round_is_full(r):
            return None
        return self.cached(("owner", layout, r), lambda: self.e.binary(
            Op.LT, self.idx(self.iop(Op.ADD, r * layout.threads, self.tid)),
            self.const(layout.nchunks, D.int32), D.int32))

    def coords(self, shape: tuple[int, ...], flat: Index) -> list[Index]:
        out: list[Index] = []
        for d in reversed(shape):
            out.append(self.iop(Op.MOD, flat, d))
            flat = self.iop(Op.IDIV, flat, d)
        return out[::-1]

    def flatten(self, shape: tuple[int, ...], coords: Sequence[Index]) -> Index:
        flat: Index = 0
        for d, c in zip(shape, coords):
            flat = self.iop(Op.ADD, self.iop(Op.MUL, flat, d), c)
        return flat

    def and_mask(self, a: Handle | None, b: Handle | None) -> Handle | None:
        if a is None or b is None:
            return b if a is None else a
        return self.e.binary(Op.AND, a, b, D.int1)

    def reserve_local(self, nbytes: int) -> None:
        """Make sure local memory holds ``nbytes`` from the emitter's current ``local_base``."""
        self.local_bytes = max(self.local_bytes, self.e.local_base + nbytes)

    def local_size(self, dtype: ScalarType, n: int) -> int:
        return -(-self.e.local_itemsize(dtype) * n // 16) * 16


# ---------------------------------------------------------------- creation


@rule(Op.CONST)
def _const(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a: A.Const = instr.attrs
    h = lw.const(a.value, a.dtype)
    return [[h] * lw.layout(instr.result).per_thread]


@rule(Op.ARANGE)
def _arange(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a: A.Arange = instr.attrs
    lay = lw.layout(instr.result)
    return [[lw.idx(lw.iop(Op.ADD, lw.flat_index(lay, j), a.start)) for j in range(lay.per_thread)]]


@rule(Op.PROGRAM_ID)
def _program_id(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    axis = instr.attrs.axis
    return [[lw.e.program_id(axis) if lw.program_ids is None else lw.program_ids[axis]]]


@rule(Op.NUM_PROGRAMS)
def _num_programs(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    axis = instr.attrs.axis
    return [[lw.e.num_programs(axis) if lw.program_counts is None else lw.program_counts[axis]]]


# ---------------------------------------------------------------- elementwise


def _zip(lw: Lowering, instr: Instr, fn: Callable[..., Handle]) -> list[list[Handle]]:
    cols = [lw.env[v] for v in instr.operands]
    lay = lw.layout(instr.results[0])
    info = lw.info.get(instr.results[0])
    reps = None if info is None else slot_representatives(lay, info.consts(len(lay.shape)))
    if reps is not None:
        # Equal over boxes a thread holds several elements of (a mask `offs < n` with n % 16 == 0
        # across a chunk, `rows < M` with M % BLOCK_M == 0 across a thread's rows): one op a box.
        out: list[Handle] = []
        for j, rep in enumerate(reps):
            out.append(fn(*(c[j] for c in cols)) if rep == j else out[rep])
        return [out]
    return [[fn(*xs) for xs in zip(*cols)]]


@rule(*BINARY_ARITH, *COMPARISON)
def _binary(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    return _zip(lw, instr, lambda a, b: apply_binary(lw, instr, a, b))


def apply_binary(lw: Lowering, instr: Instr, a: Handle, b: Handle) -> Handle:
    """``instr``'s BINARY_ARITH or COMPARISON op on one pair of elements (a DIV whose attrs allow
    it as the emitter's ``approximate_divide``, unless ``Options.codegen.approx_div`` is off)."""
    dt = instr.operands[0].type.dtype
    if instr.op is Op.DIV and instr.attrs is not None and instr.attrs.approximate and lw.options.codegen.approx_div:
        return lw.e.approximate_divide(a, b, dt)
    return lw.e.binary(instr.op, a, b, dt)


@rule(Op.NEG, Op.NOT, Op.ISNAN, *MATH)
def _unary(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    dt = instr.operands[0].type.element
    return _zip(lw, instr, lambda a: lw.e.unary(instr.op, a, dt))


@rule(Op.MATH_FN)
def _math_fn(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    fn = mathfns.FUNCTIONS[instr.attrs.name]
    dts = [v.type.element for v in instr.operands]
    return _zip(lw, instr, lambda *xs: lw.e.math_fn(fn, xs, dts))


@rule(Op.FMA)
def _fma(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    dt = instr.operands[0].type.element
    return _zip(lw, instr, lambda a, b, c: lw.e.fma(a, b, c, dt))


@rule(Op.CAST)
def _cast(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, dst = instr.operands[0].type.element, instr.attrs.dtype
    return _zip(lw, instr, lambda a: lw.e.cast(a, src, dst, instr.attrs.fp_downcast_rounding))


@rule(Op.BITCAST)
def _bitcast(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, dst = instr.operands[0].type.dtype, instr.attrs.dtype
    return _zip(lw, instr, lambda a: lw.e.bitcast(a, src, dst))


@rule(Op.WHERE)
def _where(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    dt = instr.result.type.dtype
    return _zip(lw, instr, lambda c, a, b: lw.e.select(c, a, b, dt))


@rule(Op.ADDPTR)
def _addptr(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    ptr = instr.operands[0].type.dtype
    odt = instr.operands[1].type.element
    assert isinstance(ptr, PointerType)
    return _zip(lw, instr, lambda p, o: lw.e.ptr_offset(p, o, ptr, odt))


@rule(Op.PTR_TO_INT)
def _ptr_to_int(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    ptr = instr.operands[0].type.dtype
    assert isinstance(ptr, PointerType)
    return _zip(lw, instr, lambda p: lw.e.ptr_to_int(p, ptr))


@rule(Op.INT_TO_PTR)
def _int_to_ptr(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    return _zip(lw, instr, lambda a: lw.e.int_to_ptr(a, instr.attrs.dtype))


@rule(Op.HINT)
def _hint(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    return [list(lw.env[instr.operands[0]])]


# ---------------------------------------------------------------- control flow


def _flat(lw: Lowering, values: Sequence[Value]) -> list[tuple[Handle, ScalarType]]:
    return [(h, v.type.dtype) for v in values for h in lw.env[v]]


def _split(lw: Lowering, values: Sequence[Value], handles: Sequence[Handle]) -> list[list[Handle]]:
    out, i = [], 0
    for v in values:
        n = lw.layout(v).per_thread
        out.append(list(handles[i:i + n]))
        i += n
    return out


def _bind(lw: Lowering, args: Sequence[Value], handles: Sequence[Handle]) -> None:
    for v, hs in zip(args, _split(lw, args, handles)):
        lw.env[v] = hs


def _yields(lw: Lowering, block: Block) -> list[Handle]:
    return [h for hs in lw.lower_block(block) for h in hs]


def loop_options(instr: Instr) -> A.Loop:
    """A FOR's ``tl.range`` options (the defaults where it has none)."""
    return instr.attrs if isinstance(instr.attrs, A.Loop) else A.Loop()


def loop_stages(lw: Lowering, instr: Instr) -> int:
    """A FOR's software-pipelining depth: its ``tl.range(num_stages=)``, else the launch's."""
    stages = loop_options(instr).num_stages
    return lw.options.num_stages if stages is None else stages


def report_unpipelined(lw: Lowering, instr: Instr) -> None:
    """Record a ``tl.range(num_stages=)`` of 2 or more on a loop lowered without pipelining."""
    stages = loop_options(instr).num_stages
    if stages is not None and stages >= 2:
        lw.not_applied.append(
            f"{instr.loc}: tl.range(num_stages={stages}) is not applied: this loop is not software-pipelined "
            "(only loops that feed tensor-core tl.dot operands from global loads are, on cuda)")


@rule(Op.FOR)
def _for(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    lb, ub, step = (lw.env[v][0] for v in instr.operands[:3])
    (body,) = instr.regions
    iv_dtype = instr.operands[0].type.element

    def run(iv: Handle, carried: list[Handle]) -> list[Handle]:
        lw.env[body.args[0]] = [iv]
        _bind(lw, body.args[1:], carried)
        return _yields(lw, body)

    report_unpipelined(lw, instr)
    factor = loop_options(instr).loop_unroll_factor
    hint = {} if factor is None else {"unroll": factor}
    body_fn = lw.in_scope(run)
    if lw.hazards is not None:
        body_fn = lw.hazards.loop_body(lw, instr, body_fn)
    outs = lw.e.for_range(lb, ub, step, iv_dtype, _flat(lw, instr.operands[3:]), body_fn, **hint)
    return _split(lw, instr.results, outs)


@rule(Op.WHILE)
def _while(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    cond_block, body = instr.regions

    def cond(carried: list[Handle]) -> Handle:
        _bind(lw, cond_block.args, carried)
        return lw.lower_block(cond_block)[0][0]

    def run(carried: list[Handle]) -> list[Handle]:
        _bind(lw, body.args, carried)
        return _yields(lw, body)

    test, body_fn = lw.in_scope(cond), lw.in_scope(run)
    if lw.hazards is not None:
        test, body_fn = lw.hazards.while_loop(lw, instr, test, body_fn)
    outs = lw.e.while_loop(_flat(lw, instr.operands), test, body_fn)
    return _split(lw, instr.results, outs)


@rule(Op.IF)
def _if(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    then, otherwise = instr.regions
    types = [v.type.dtype for v in instr.results for _ in range(lw.layout(v).per_thread)]
    first, second = lw.in_scope(lambda: _yields(lw, then)), lw.in_scope(lambda: _yields(lw, otherwise))
    if lw.hazards is not None:
        first, second = lw.hazards.branches(first, second)
    outs = lw.e.if_else(lw.env[instr.operands[0]][0], types, first, second)
    return _split(lw, instr.results, outs)


@rule(Op.BARRIER)
def _barrier(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    lw.e.program_barrier()
    if lw.hazards is not None:
        lw.hazards.barrier()
    return []


@rule(Op.DEVICE_PRINT)
def _print(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    # Each value is printed by the thread that owns it (thread 0 for scalars and for a print
    # without operands): one line per owner predicate, so copies held by idle threads stay silent.
    text = instr.attrs.text if instr.attrs else ""
    lines: dict[Any, list[tuple[Handle, Any]]] = {}
    for v in instr.operands:
        lay = lw.layout(v)
        for j, h in enumerate(lw.env[v]):
            lines.setdefault(lw.owner(lay, j), []).append((h, v.type.dtype))
    if not lines:
        lines[lw.owner(lw.layout(()), 0)] = []
    for cond, values in lines.items():
        if cond is None:
            lw.e.device_print(text, values)
        else:
            lw.e.when(cond, lambda values=values: lw.e.device_print(text, values))  # type: ignore[misc]
    return []


def _any_vector_access(kernel: Kernel, info: Any, threads: int, max_vec: int, emitter: Emitter) -> bool:
    """Whether some global access of the kernel vectorizes with chunks of ``max_vec`` (or the kernel
    has other reasons to keep wide chunks: tensor cores, descriptors).  Where none does, chunks of
    several elements only spread each scalar access of a warp over ``vec`` times the bytes."""
    for instr in kernel.walk():
        if instr.op in (Op.DOT, Op.DESC_LOAD, Op.DESC_STORE):
            return True
        if instr.op not in (Op.LOAD, Op.STORE):
            continue
        lay = choose_layout(instr.operands[0].type.shape, threads, max_vec)
        if access_width(info, emitter.vector_ok, instr, lay) > 1:
            return True
    return False


def _widest_chunk(kernel: Kernel) -> int:
    """Elements per chunk: 16 bytes of the narrowest type loaded or stored (4 to 8)."""
    sizes = [instr.operands[0].type.element.itemsize for instr in kernel.walk()
             if instr.op in (Op.LOAD, Op.STORE)]
    narrowest = min(sizes, default=4)
    return max(4, min(8, 16 // max(narrowest, 1)))

