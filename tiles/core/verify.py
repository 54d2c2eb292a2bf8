"""The IR verifier: SSA dominance, type rules, attribute records, and region signatures."""

from __future__ import annotations

from .attrs import ATTRS_OF
from .errors import CompilationError
from .ir import Block, Instr, Kernel, Value
from .ops import Op
from .typerules import TYPE_RULES, IRTypeError


def _fail(instr: Instr, message: str) -> CompilationError:
    return CompilationError(f"IR verification failed at {instr.op.value}: {message}", instr.loc)


def _check_attrs(instr: Instr) -> None:
    expected = ATTRS_OF.get(instr.op, (type(None),))
    if not isinstance(instr.attrs, expected):
        names = " or ".join(t.__name__ for t in expected)
        raise _fail(instr, f"attrs must be {names}, got {type(instr.attrs).__name__}")


def _check_regions(instr: Instr) -> None:
    results = [r.type for r in instr.results]
    if instr.op is Op.FOR:
        (body,) = instr.regions
        carried = [v.type for v in instr.operands[3:]]
        if [a.type for a in body.args[1:]] != carried or [y.type for y in body.yields] != carried \
                or results != carried:
            raise _fail(instr, "for: inits, region args, yields and results must agree in type")
    elif instr.op is Op.WHILE:
        cond, body = instr.regions
        carried = [v.type for v in instr.operands]
        if len(cond.yields) != 1 or [y.type for y in body.yields] != carried or results != carried:
            raise _fail(instr, "while: carried types disagree or the condition is not one value")
    elif instr.op is Op.IF:
        then, other = instr.regions
        if [y.type for y in then.yields] != results or [y.type for y in other.yields] != results:
            raise _fail(instr, "if: both regions must yield the result types")


def verify(kernel: Kernel) -> None:
    defined: set[Value] = {p.value for p in kernel.params}

    def block(b: Block, scope: set[Value]) -> None:
        local = set(scope) | set(b.args)
        for instr in b.instrs:
            for v in instr.operands:
                if v not in local:
                    raise _fail(instr, f"operand {v!r} is used before it is defined")
            _check_attrs(instr)
            rule = TYPE_RULES.get(instr.op)
            if rule is not None and not instr.regions:
                try:
                    expected = rule([v.type for v in instr.operands], instr.attrs)
                except IRTypeError as e:
                    raise _fail(instr, str(e)) from None
                if list(expected) != [r.type for r in instr.results]:
                    raise _fail(instr, f"results {[str(r.type) for r in instr.results]} != "
                                       f"{[str(t) for t in expected]}")
            else:
                _check_regions(instr)
            for region in instr.regions:
                block(region, local)
            local.update(instr.results)
        for y in b.yields:
            if y not in local:
                raise CompilationError(f"IR verification failed: yield of undefined {y!r}")

    block(kernel.body, defined)
