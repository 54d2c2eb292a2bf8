"""Hypothesis strategies for random well-typed kernels (``Program``) and their inputs.

Undefined behaviour is never generated: divisors are guarded against 0 and
MIN // -1, shift amounts are masked below the bit width, floats are clamped into
range before a conversion to an integer type.  Signed overflow is fine (it wraps).
Results that depend on the order of concurrent work are never compared as values:
a contended atomic's old values are compared per address as a multiset (every lane of
an address applies the same value) and never flow into other statements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
from hypothesis import strategies as st

from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..compare import OP_RULES
from ..values import edge_values
from .draws import Draw, choose
from .program import Atomic, Input, Node, Program, Stmt, literal, tl_name
from .sync import statement

INT_DTYPES = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64)
FLOAT_DTYPES = (D.float16, D.bfloat16, D.float32)
FLAVORS: dict[str, dict[str, Any]] = {
    "int": {"dtypes": INT_DTYPES, "casts": INT_DTYPES + (D.int1,)},
    "float": {"dtypes": FLOAT_DTYPES + (D.int32,),
              "casts": FLOAT_DTYPES + (D.float8e4nv, D.float8e5, D.int8, D.int32, D.uint16)},
    "mixed": {"dtypes": INT_DTYPES + FLOAT_DTYPES,
              "casts": INT_DTYPES + FLOAT_DTYPES + (D.int1, D.float8e5, D.float64)},
}
SHAPES = ((4, 8), (1, 16), (8, 2), (2, 2), (16, 16))
ATOMIC_DTYPES = (D.int32, D.uint32, D.int64, D.uint64, D.float32)
ATOMIC_KINDS = {"int": ("add", "max", "min", "and", "or", "xor", "xchg", "cas"), "float": ("add", "xchg")}
LOOP_DTYPES = INT_DTYPES + FLOAT_DTYPES
MATH = {"exp": "tl.exp", "log": "tl.log", "sqrt": "tl.sqrt", "sin": "tl.sin", "exp2": "tl.exp2"}



def _ulps_of(fn: str) -> int:
    from tiles.core.ops import Op
    return OP_RULES[{"exp": Op.EXP, "log": Op.LOG, "sqrt": Op.SQRT, "sin": Op.SIN, "exp2": Op.EXP2,
                     "div": Op.DIV}[fn]].ulps


class Builder:
    """Draws statements one at a time; each returns None when nothing in the pool fits."""

    def __init__(self, draw: Draw, flavor: str, program: Program) -> None:
        self.draw, self.flavor, self.program = draw, flavor, program
        self.pool: list[Node] = []
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def pick(self, ok: Callable[[Node], bool], avoid: Node | None = None) -> Node | None:
        """A pool value satisfying ``ok``; recent values and values other than ``avoid`` preferred."""
        candidates = [n for n in self.pool if ok(n)]
        others = [n for n in candidates if n is not avoid]
        candidates = others or candidates
        if not candidates:
            return None
        if len(candidates) > 2 and self.draw(st.booleans()):
            candidates = candidates[-2:]
        return candidates[self.draw(st.integers(0, len(candidates) - 1))]  # a cached strategy: fast

    def add(self, node: Node, lines: list[str], uses: tuple[str, ...], pooled: bool = True,
            effect: bool = False) -> Node:
        """Record a statement; its result joins the pool unless ``pooled`` is False."""
        self.program.stmts.append(Stmt(node, lines, uses, effect))
        if pooled:
            self.pool.append(node)
        return node

    # ------------------------------------------------------------ statements
    def binary(self) -> Node | None:
        op = choose(self.draw, ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "/"])
        a = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        b = self.pick(lambda n: n.exact and not n.dtype.is_bool, avoid=a)
        if a is None or b is None:
            return None
        ints = a.dtype.is_int and b.dtype.is_int
        if op in ("//", "%", "/") and ints and a.dtype.is_signed != b.dtype.is_signed:
            return None
        if op in ("//", "&", "|", "^", "<<", ">>") and not ints:
            return None
        ctype = D.computation_type(a.dtype, False, b.dtype, False, op in ("//", "%", "/"))
        name = self.fresh()
        shape = _broadcast(a.shape, b.shape)
        if op == "/":
            if b.zero_sign_free:
                return None
            rtype = D.float32 if ctype.is_int else ctype
            return self.add(Node(name, rtype, shape, ulps=_ulps_of("div")), [f"{name} = {a.name} / {b.name}"],
                            (a.name, b.name))
        if ctype.is_floating and op in ("+", "-") and (a.from_mul or b.from_mul):
            return None
        t = tl_name(ctype)
        lines = [f"{name}_a = {a.name}.to({t})", f"{name}_b = {b.name}.to({t})"]
        if op in ("//", "%") and ints:
            guard = f"({name}_b == 0)"
            if ctype.is_signed:
                guard += f" | (({name}_b == -1) & ({name}_a == {int(ctype.min())}))"
            lines.append(f"{name} = {name}_a {op} tl.where({guard}, 1, {name}_b)")
        elif op in ("<<", ">>"):
            lines.append(f"{name} = {name}_a {op} ({name}_b & {ctype.bits - 1})")
        else:
            if op == "%" and b.zero_sign_free:
                return None
            lines.append(f"{name} = {name}_a {op} {name}_b")
        node = Node(name, ctype, shape, from_mul=ctype.is_floating and op == "*")
        return self.add(node, lines, (a.name, b.name))

    def minmax(self) -> Node | None:
        a = self.pick(lambda n: True)
        if a is None:
            return None
        b = self.pick(lambda n: n.dtype == a.dtype or (n.exact and a.exact), avoid=a)
        if b is None:
            return None
        ctype = D.computation_type(a.dtype, False, b.dtype, False)
        fn = choose(self.draw, ["tl.maximum", "tl.minimum"])
        nan = self.draw(st.booleans()) and ctype.is_floating
        extra = ", propagate_nan=tl.PropagateNan.ALL" if nan else ""
        name = self.fresh()
        node = Node(name, ctype, _broadcast(a.shape, b.shape), max(a.ulps, b.ulps),
                    zero_sign_free=ctype.is_floating)
        return self.add(node, [f"{name} = {fn}({a.name}, {b.name}{extra})"], (a.name, b.name))

    def compare(self) -> Node | None:
        a = self.pick(lambda n: n.exact)
        b = self.pick(lambda n: n.exact, avoid=a)
        if a is None or b is None:
            return None
        op = choose(self.draw, ["<", "<=", "==", "!=", ">", ">="])
        name = self.fresh()
        return self.add(Node(name, D.int1, _broadcast(a.shape, b.shape)), [f"{name} = {a.name} {op} {b.name}"],
                        (a.name, b.name))

    def where(self) -> Node | None:
        c = self.pick(lambda n: n.dtype.is_bool and n.exact)
        a = self.pick(lambda n: True)
        if c is None or a is None:
            return None
        b = self.pick(lambda n: n.dtype == a.dtype or (n.exact and a.exact))
        if b is None:
            return None
        ctype = D.computation_type(a.dtype, False, b.dtype, False)
        name = self.fresh()
        shape = _broadcast(c.shape, _broadcast(a.shape, b.shape))
        node = Node(name, ctype, shape, max(a.ulps, b.ulps), a.zero_sign_free or b.zero_sign_free)
        return self.add(node, [f"{name} = tl.where({c.name}, {a.name}, {b.name})"], (c.name, a.name, b.name))

    def unary(self) -> Node | None:
        op = choose(self.draw, ["-", "~", "tl.abs", "tl.floor", "tl.ceil"])
        a = self.pick(lambda n: not n.dtype.is_bool or op == "~")
        if a is None or (op == "~" and not a.dtype.is_int):
            return None
        # tl.floor / tl.ceil take float16, bfloat16, float32 and float64 (no fp8)
        if op in ("tl.floor", "tl.ceil") and (a.dtype not in FLOAT_DTYPES + (D.float64,) or not a.exact):
            return None
        name = self.fresh()
        text = f"{op}({a.name})" if op.startswith("tl.") else f"{op}{a.name}"
        node = Node(name, a.dtype, a.shape, a.ulps, a.zero_sign_free)
        return self.add(node, [f"{name} = {text}"], (a.name,))

    def math(self) -> Node | None:
        a = self.pick(lambda n: n.exact and n.dtype in FLOAT_DTYPES)
        if a is None:
            return None
        fn = choose(self.draw, sorted(MATH))
        name = self.fresh()
        node = Node(name, a.dtype, a.shape, _ulps_of(fn), a.zero_sign_free)
        return self.add(node, [f"{name} = {MATH[fn]}({a.name})"], (a.name,))

    def fma(self) -> Node | None:
        a = self.pick(lambda n: n.exact and n.dtype == D.float32)
        if a is None:
            return None
        b, c = self.pick(lambda n: n.exact and n.dtype == D.float32), self.pick(
            lambda n: n.exact and n.dtype == D.float32)
        assert b is not None and c is not None
        name = self.fresh()
        shape = _broadcast(a.shape, _broadcast(b.shape, c.shape))
        return self.add(Node(name, D.float32, shape), [f"{name} = tl.fma({a.name}, {b.name}, {c.name})"],
                        (a.name, b.name, c.name))

    def cast(self) -> Node | None:
        a = self.pick(lambda n: n.exact)
        if a is None:
            return None
        dst = choose(self.draw, FLAVORS[self.flavor]["casts"])
        name = self.fresh()
        src = a.name
        if a.dtype.is_floating and dst.is_int and not dst.is_bool:
            src = _clamped(a.name, a.dtype, dst)
        szf = a.zero_sign_free and dst.is_floating
        return self.add(Node(name, dst, a.shape, zero_sign_free=szf), [f"{name} = {src}.to({tl_name(dst)})"],
                        (a.name,))

    def reduce(self) -> Node | None:
        a = self.pick(lambda n: n.shape == "MN" and not n.dtype.is_bool)
        if a is None:
            return None
        kinds = ["tl.max", "tl.min"] + (["tl.sum", "tl.xor_sum"] if a.dtype.is_int and a.exact else [])
        fn = choose(self.draw, kinds)
        axis = choose(self.draw, [0, 1])
        dtype = a.dtype
        if fn == "tl.sum" and dtype.bits < 32:
            dtype = D.uint32 if dtype.kind is D.Kind.UINT else D.int32
        elif fn in ("tl.max", "tl.min") and dtype.bits < 32:  # as Triton's tl.max: int32 / float32
            dtype = D.float32 if dtype.is_floating else D.int32
        name = self.fresh()
        node = Node(name, dtype, "1N" if axis == 0 else "M1", a.ulps, dtype.is_floating)
        return self.add(node, [f"{name} = {fn}({a.name}, axis={axis}, keep_dims=True)"], (a.name,))

    def shuffle(self) -> Node | None:
        a = self.pick(lambda n: n.shape == "MN")
        if a is None:
            return None
        name = self.fresh()
        node = Node(name, a.dtype, "MN", a.ulps, a.zero_sign_free, a.from_mul)
        return self.add(node, [f"{name} = tl.reshape(tl.trans({a.name}), (M, N))"], (a.name,))

    def dot(self) -> Node | None:
        if (self.program.m, self.program.n) != (16, 16):
            return None
        a = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        b = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        if a is None or b is None:
            return None
        as_float = self.draw(st.booleans())
        operand = "tl.float16" if as_float else "tl.int8"
        name = self.fresh()
        lines = [f"{name}_a = tl.broadcast_to({_clamped(a.name, a.dtype, D.int8)}.to(tl.int8), (M, N))",
                 f"{name}_b = tl.broadcast_to({_clamped(b.name, b.dtype, D.int8)}.to(tl.int8), (M, N))",
                 f"{name} = tl.dot({name}_a.to({operand}), {name}_b.to({operand}))"]
        return self.add(Node(name, D.float32 if as_float else D.int32, "MN"), lines, (a.name, b.name))

    def loop(self) -> Node | None:
        acc = self.pick(lambda n: n.shape == "MN" and n.exact and not n.dtype.is_bool)
        if acc is None:
            return None
        other = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        floating = acc.dtype.is_floating
        op = choose(self.draw, ["+", "-", "*", "max"] + ([] if floating else ["^"]))
        operand = "it" if other is None or self.draw(st.booleans()) else other.name
        if op == "^" and other is not None and operand == other.name and not other.dtype.is_int:
            operand = "it"  # xor takes integers only
        if floating and op in ("+", "-") and (acc.from_mul or (other is not None and other.from_mul
                                                                and operand != "it")):
            return None
        if floating and op == "*":
            return None  # a loop may mul then add across iterations; keep loops contraction-free
        name = self.fresh()
        step = f"tl.maximum({name}, {operand})" if op == "max" else f"{name} {op} {operand}"
        lines = [f"{name} = {acc.name}", "for it in range(trips):",
                 f"    {name} = ({step}).to({tl_name(acc.dtype)})"]
        uses = (acc.name,) if operand == "it" else (acc.name, operand)
        node = Node(name, acc.dtype, "MN", zero_sign_free=acc.zero_sign_free or (floating and op == "max"))
        return self.add(node, lines, uses)

    def branch(self) -> Node | None:
        a = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        b = self.pick(lambda n: n.exact and not n.dtype.is_bool)
        if a is None or b is None or a.from_mul or b.from_mul:
            return None
        ctype = D.computation_type(a.dtype, False, b.dtype, False)
        name = self.fresh()
        t = tl_name(ctype)
        lines = ["if flag > 0:", f"    {name} = ({a.name} + {b.name}).to({t})", "else:",
                 f"    {name} = tl.maximum({a.name}, {b.name}).to({t})"]
        return self.add(Node(name, ctype, _broadcast(a.shape, b.shape), zero_sign_free=ctype.is_floating),
                        lines, (a.name, b.name))


    def scan(self) -> Node | None:
        a = self.pick(lambda n: n.shape == "MN" and n.exact and n.dtype.is_int and not n.dtype.is_bool)
        if a is None:
            return None
        axis = choose(self.draw, [0, 1])
        dtype = a.dtype if a.dtype.bits >= 32 else (D.uint32 if a.dtype.kind is D.Kind.UINT else D.int32)
        name = self.fresh()
        return self.add(Node(name, dtype, "MN"),
                        [f"{name} = tl.cumsum({a.name}.to({tl_name(dtype)}), axis={axis})"], (a.name,))

    def sort(self) -> Node | None:
        a = self.pick(lambda n: n.shape == "MN" and n.exact and n.dtype in INT_DTYPES + FLOAT_DTYPES)
        if a is None:
            return None
        name = self.fresh()
        descending = self.draw(st.booleans())
        node = Node(name, a.dtype, "MN", zero_sign_free=a.dtype.is_floating or a.zero_sign_free)
        return self.add(node, [f"{name} = tl.sort({a.name}, descending={descending})"], (a.name,))

    def gather(self) -> Node | None:
        src = self.pick(lambda n: n.shape == "MN")
        index = self.pick(lambda n: n.shape == "MN" and n.exact and n.dtype.is_int and not n.dtype.is_bool)
        if src is None or index is None:
            return None
        name = self.fresh()
        node = Node(name, src.dtype, "MN", src.ulps, src.zero_sign_free, src.from_mul)
        return self.add(node, [f"{name} = tl.gather({src.name}, ({index.name} & (N - 1)).to(tl.int32), 1)"],
                        (src.name, index.name))

    def while_loop(self) -> Node | None:
        acc = self.pick(lambda n: n.exact and n.dtype.is_int and not n.dtype.is_bool)
        if acc is None:
            return None
        op = choose(self.draw, ["+", "^", "*"])
        name = self.fresh()
        t = tl_name(acc.dtype)
        lines = [f"{name} = {acc.name}", f"{name}_i = 0", f"while {name}_i < trips + flag:",
                 f"    {name} = ({name} {op} ({name}_i + 3)).to({t})", f"    {name}_i += 1"]
        return self.add(Node(name, acc.dtype, acc.shape), lines, (acc.name,))

    def nested_loop(self) -> Node | None:
        """A loop whose body runs an inner ``for`` (bounds from the outer variable) or ``while``,
        both carrying values."""
        acc = self.pick(lambda n: n.shape == "MN" and n.exact and n.dtype in LOOP_DTYPES)
        inner = self.pick(lambda n: n.exact and n.dtype in LOOP_DTYPES, avoid=acc)
        if acc is None or inner is None:
            return None
        floating = acc.dtype.is_floating
        if floating and (acc.from_mul or inner.from_mul):
            return None  # an add fed by a product: a backend may contract it
        ops = ("+", "max", "min") if floating else ("+", "^", "*", "max")
        inner_op, outer_op = choose(self.draw, ops), choose(self.draw, ops)
        name, t = self.fresh(), tl_name(acc.dtype)
        start = _clamped(inner.name, inner.dtype, acc.dtype) if inner.dtype.is_floating and not floating \
            else inner.name
        lines = [f"{name} = {acc.name}", "for it in range(trips):", f"    {name}_j = {start}.to({t})"]
        if self.draw(st.booleans()):
            lines += ["    for jt in range(it, trips + 1):",
                      f"        {name}_j = ({_step(f'{name}_j', '(jt + 1)', inner_op)}).to({t})"]
        else:
            lines += [f"    {name}_k = 0", f"    while {name}_k < it + flag + 1:",
                      f"        {name}_j = ({_step(f'{name}_j', f'({name}_k + 2)', inner_op)}).to({t})",
                      f"        {name}_k += 1"]
        lines.append(f"    {name} = ({_step(name, f'{name}_j', outer_op)}).to({t})")
        szf = acc.zero_sign_free or inner.zero_sign_free or (floating and {inner_op, outer_op} & {"max", "min"})
        return self.add(Node(name, acc.dtype, "MN", zero_sign_free=bool(szf)), lines, (acc.name, inner.name))

    def atomic(self) -> Node | None:
        """An atomic on a buffer of its own, one address per lane (its old values join the pool) or
        one per row (contended: the row's lanes apply the row's first value; old values only stored)."""
        v = self.pick(lambda n: n.exact and not n.zero_sign_free and not n.dtype.is_bool)
        if v is None:
            return None
        dtype = v.dtype if v.dtype in ATOMIC_DTYPES else choose(self.draw, ATOMIC_DTYPES)
        kind = choose(self.draw, ATOMIC_KINDS["float" if dtype.is_floating else "int"])
        contended = self.draw(st.booleans())
        name, t = self.fresh(), tl_name(dtype)
        value = _clamped(v.name, v.dtype, dtype) if v.dtype.is_floating and dtype.is_int else v.name
        lines = [f"{name}_v = tl.broadcast_to({value}, (M, N)).to({t})"]
        where, mask = "offs", ""
        if contended:
            lines.append(f"{name}_v = tl.broadcast_to(tl.sum(tl.where(cols == 0, {name}_v, 0).to({t}), axis=1, "
                         f"keep_dims=True).to({t}), (M, N))")
            where, mask = "(pid * M + rows) + cols * 0", ", mask=valid"
        if kind == "cas":  # no mask: every lane's address is in the buffer
            lines.append(f"{name} = tl.atomic_cas({name}_mem_ptr + {where}, tl.load({name}_cmp_ptr + {where}), "
                         f"{name}_v)")
        else:
            lines.append(f"{name} = tl.atomic_{kind}({name}_mem_ptr + {where}, {name}_v{mask})")
        lines.append(f"tl.store({name}_old_ptr + offs, {name}{mask})")
        self.program.atomics.append(Atomic(name, kind, dtype, contended))
        return self.add(Node(name, dtype, "MN"), lines, (v.name,), pooled=not contended, effect=True)


    def sync(self) -> Node | None:
        """A lock, a ticket, a scalar atomic of a sum, a flag spun on, a float max of negatives."""
        return statement(self)


def _step(x: str, y: str, op: str) -> str:
    if op in ("max", "min"):
        return f"tl.{op}imum({x}, {y})"
    return f"{x} {op} {y}"


KINDS = ("binary", "binary", "minmax", "compare", "where", "unary", "cast", "reduce", "shuffle", "loop",
         "branch", "dot", "math", "fma", "scan", "sort", "gather", "while_loop", "nested_loop", "atomic",
         "sync")


def _broadcast(a: str, b: str) -> str:
    if a == b:
        return a
    return "MN"


def _clamped(name: str, src: DType, dst: DType) -> str:
    """``name`` limited to values whose conversion to ``dst`` is defined (NaN becomes the low bound)."""
    if not src.is_floating:
        lo = max(int(dst.min()), int(src.min()), -100)  # a number the tile's own type holds, too
        hi = min(int(dst.max()), int(src.max()), 100)
        return f"tl.minimum(tl.maximum({name}, {lo}), {hi})"
    fmax = float(ml_dtypes.finfo(src.np).max)
    top = min(float(2 ** (dst.bits - 2)), fmax)
    bottom = 0.0 if not dst.is_signed else -top
    return f"tl.minimum(tl.maximum({name}, {literal(bottom)}), {literal(top)})"


def _other_literal(d: DType, draw: Draw) -> str:
    value = choose(draw, edge_values(d))
    if d.is_bool:
        return repr(bool(value))
    return literal(int(value) if d.is_int else float(value))


def _layout(draw: Draw, m: int, n: int) -> tuple[tuple[int, int] | None, bool]:
    """(strides, passed at run time): row-major (most often), column-major, or rows ``step``
    elements apart and columns ``sc`` apart."""
    layout = choose(draw, ["rows", "rows", "columns", "strided", "strided at run time"])
    if layout == "rows":
        return None, False
    if layout == "columns":
        return (1, m), False
    sc = choose(draw, [2, 3])
    return (n * sc + choose(draw, [0, 1, 5]), sc), layout == "strided at run time"


@st.composite
def programs(draw: Draw, flavor: str) -> Program:
    m, n = choose(draw, SHAPES)
    dtypes = FLAVORS[flavor]["dtypes"]
    inputs = []
    for i in range(draw(st.integers(2, 3))):
        d = choose(draw, dtypes)
        masked = draw(st.booleans())
        strides, runtime = _layout(draw, m, n)
        inputs.append(Input(f"in{i}", d, masked, _other_literal(d, draw) if masked else "", strides, runtime))
    program = Program(inputs, m=m, n=n, programs=choose(draw, [1, 2]),
                      num_warps=choose(draw, [4, 1, 2, 8]), out_strides=_layout(draw, m, n)[0])
    builder = Builder(draw, flavor, program)
    builder.pool = [Node(i.name, i.dtype, "MN") for i in inputs]
    wanted = draw(st.integers(1, 8))
    for _ in range(3 * wanted):
        if len(program.stmts) >= wanted:
            break
        getattr(builder, choose(draw, KINDS))()
    program.output = builder.pool[-1]
    return program
