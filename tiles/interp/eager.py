"""The eager builder: every op a kernel builds is executed at once, for the programs being stepped.

In stepping mode (``stepping.py``) a kernel's Python runs one program at a time.  Each
``tl`` op still builds its IR instruction through the language's ordinary code, and the
``EagerBuilder`` hands it straight to the NumPy interpreter's own rule (``INTERP_RULES``), on
a program set of size 1: results are ``LiveValue``s holding the program's data, so the
semantics are the interpreter's by construction.  Instructions with regions (``x if c else y``
on a run-time scalar, ``tl.reduce`` with a combine function) are recorded as the tracer
records them and run through the interpreter's walker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.builder import Builder, user_loc
from ..core.dtypes import FP8E4B15_STORAGE, PointerType
from ..core.errors import CompilationError, TilesError
from ..core.ir import Block, Instr, Kernel, TileType, Value
from ..core.live import LiveValue
from ..core.ops import Op
from ..core.semantics import widen
from ..core.typerules import IRTypeError, infer
from .context import Ctx, Launch
from .executor import Plan, _Walker
from .memory import Memory, addresses
from .programs import Programs
from .rules import INTERP_RULES


class _NoCache(dict):  # type: ignore[type-arg]
    """The rules cache CONST/ARANGE results per instruction; eager instructions never repeat."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class StepSession:
    """One program (or a set) of one launch, run eagerly: executes and shows values."""

    def __init__(self, kernel: Kernel, memory: Memory, progs: Programs, debug: bool) -> None:
        self.kernel = kernel
        self.memory = memory
        self.progs = progs
        self.debug = debug
        self.launch = Launch(kernel, memory, self._no_regions, lambda block: ())
        self.launch.cache = _NoCache()
        self.ctx = Ctx(progs, self.launch, {})

    def _no_regions(self, *args: Any) -> Any:
        raise AssertionError("regions run through a walker")

    # ---------------------------------------------------------------- running
    def execute(self, instr: Instr) -> Sequence[Any]:
        if instr.op is Op.DEVICE_ASSERT and not self.debug:
            return ()  # dropped without debug, as when compiled (runtime/jit.py)
        if not instr.regions:
            return INTERP_RULES[instr.op](self.ctx, instr, [v.array for v in instr.operands])  # type: ignore[attr-defined]
        body = Block(instrs=[instr], yields=list(instr.results))
        kernel = Kernel(self.kernel.name, [], body, self.kernel.loc)
        plan = Plan(kernel)
        walker = _Walker(plan)
        launch = Launch(kernel, self.memory, walker.run_region, plan.free.__getitem__)
        launch.cache = _NoCache()
        env = {v: v.array for v in plan.free[body]}  # type: ignore[attr-defined]
        return walker.run_block(Ctx(self.progs, launch, env), body)

    # ---------------------------------------------------------------- showing
    def host(self, value: LiveValue) -> np.ndarray:
        """The value of the (first) program being stepped: shape ``value.type.shape`` (float8e4b15,
        which NumPy has no type for, decoded to float32)."""
        a = value.array
        if not isinstance(a, np.ndarray):
            a = addresses(a)
        elif a.dtype == FP8E4B15_STORAGE:
            a = widen(a)
        return np.broadcast_to(a, (max(1, a.shape[0]), *value.type.shape))[0]

    def truth(self, value: LiveValue) -> bool:
        a = self.host(value)
        if a.size != 1:
            raise CompilationError(
                f"the truth value of a tile of shape {list(value.type.shape)} is ambiguous; use an "
                "`if` on a scalar (tl.max(x, 0), tl.sum(x, 0) > 0), or tl.where", user_loc())
        return bool(a.reshape(()))

    def format(self, value: LiveValue) -> str:
        a = self.host(value)
        ty = value.type
        if isinstance(ty.dtype, PointerType):
            body = self._pointers(a, ty.dtype)
        elif a.ndim == 0:
            body = repr(a.item())
        else:
            body = np.array2string(a, separator=", ", threshold=64, edgeitems=4, max_line_width=100,
                                   prefix="tensor(")
        return f"tensor({body}, {ty})"

    def _pointers(self, a: np.ndarray, dtype: PointerType) -> str:
        """Addresses as argument + element offset (``x_ptr+3``): what a pointer means in a kernel."""
        size = dtype.element.itemsize if hasattr(dtype.element, "itemsize") else 8
        names = {b.base >> 44: b for b in self.memory.buffers}

        def one(addr: int) -> str:
            b = names.get(addr >> 44)
            if b is None:
                return hex(addr)
            off = addr - b.origin
            return f"{b.name}+{off // size}" if off % size == 0 else f"{b.name}+{off}B"
        flat = [one(int(x)) for x in a.ravel()]
        if a.ndim == 0:
            return flat[0]
        shown = flat if len(flat) <= 16 else [*flat[:8], "...", *flat[-8:]]
        return "[" + ", ".join(shown) + "]" + (f" (shape {list(a.shape)})" if a.ndim > 1 else "")


class EagerBuilder(Builder):
    """A builder whose top-level instructions run at once (``StepSession.execute``)."""

    def __init__(self, session: StepSession, stepping_version: Callable[[Any], Any]) -> None:
        super().__init__()
        self.session = session
        self.stepping_version = stepping_version  # @jit function -> its stepping Python

    def function_for(self, jit_fn: Any) -> Any:
        """What a call to a @jit helper runs: its stepping version, unless a region is being
        recorded (a combine function, a branch of ``x if c else y``), which traces as usual."""
        if len(self.blocks) > 1:
            return jit_fn.rewritten
        return self.stepping_version(jit_fn)

    def emit(self, op: Op, operands: Sequence[Value], attrs: Any = None,
             result_types: Sequence[TileType] | None = None,
             regions: Sequence[Block] = ()) -> tuple[Value, ...]:
        if len(self.blocks) > 1:  # recording a region
            return super().emit(op, operands, attrs, result_types, regions)
        loc = user_loc()
        if result_types is None:
            try:
                result_types = infer(op, [v.type for v in operands], attrs)
            except IRTypeError as e:
                raise CompilationError(str(e), loc, cause=ValueError(str(e)))  # noqa: B904  (__cause__ is the bare error)
        session = self.session
        results = tuple(LiveValue(t, None, session) for t in result_types)
        instr = Instr(op, tuple(operands), results, attrs, tuple(regions), loc)
        try:
            out = session.execute(instr)
        except TilesError:
            raise
        except Exception as e:
            e.add_note(f"while running {op.value} at {loc} in kernel '{session.kernel.name}'")
            raise
        for r, a in zip(results, out):
            r.array = a
        return results
