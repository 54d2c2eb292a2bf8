"""The IR walker: runs a kernel over its grid, a chunk of programs at a time.

Every value carries a leading program axis (length P, or 1 when it is the same
for every program), so one NumPy call serves the whole chunk.  Control flow
that differs between programs runs on subsets: IF runs each region on the
programs that take it and merges the results; FOR/WHILE iterate on the programs
still active.  Uniform control flow never splits.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import config
from ..core.errors import KernelRuntimeError, LaunchError, TilesError
from ..core.ir import Block, Instr, Kernel, Value
from ..core.ops import MEMORY, Op
from .allocator import reuse_freed_memory
from .context import Ctx, Launch
from .memory import DeferredPtr, Memory
from .programs import Programs
from .rules import INTERP_RULES

CHUNK_ELEMENTS = 1 << 22  # elements of the largest tile over all programs of a chunk


class Plan:
    """What the walker precomputes once per kernel."""

    def __init__(self, kernel: Kernel) -> None:
        self.fingerprint = _fingerprint(kernel)
        self.free: dict[Block, tuple[Value, ...]] = {}
        self.dead: dict[Block, list[list[Value]]] = {}
        self.region_free: dict[Instr, tuple[Value, ...]] = {}
        self.deferred: set[Instr] = set()  # ADDPTRs whose results only feed memory accesses
        self._analyze(kernel.body)
        self.lazy = _lazy_broadcasts(kernel, self.deferred)
        self.steps: dict[Block, list[Step]] = {}
        self._compile(kernel.body)
        biggest = max([1, *(p.value.type.numel for p in kernel.params),
                       *(v.type.numel for i in kernel.walk() for v in i.results),
                       *(a.type.numel for i in kernel.walk() for r in i.regions for a in r.args)])
        # locks and flags: one program at a time, in order, as Triton's interpreter runs them
        self.sequential = any(i.op is Op.ATOMIC_CAS or (i.op is Op.ATOMIC and i.attrs.kind == "xchg")
                              or (i.op is Op.LOAD and i.attrs.volatile) for i in kernel.walk())
        self.chunk = 1 if self.sequential else max(1, CHUNK_ELEMENTS // biggest)
        # CONST/ARANGE results (rules._cached): the same for every launch, read-only, kept here
        self.constants: dict[Instr, tuple[np.ndarray, ...]] = {}

    def _compile(self, block: Block) -> None:
        """Each instruction of ``block`` (and of its regions) as a Step, looked up once."""
        steps = []
        for instr, dead in zip(block.instrs, self.dead[block]):
            for region in instr.regions:
                self._compile(region)
            kind = _KINDS.get(instr.op, DEFERRED if instr in self.deferred else
                              LAZY_BROADCAST if instr in self.lazy else RULE)
            rule: Any = INTERP_RULES.get(instr.op) if kind == RULE else None
            if kind == DEFERRED:  # the pointee's size
                rule = instr.results[0].type.element.itemsize
            elif kind == LAZY_BROADCAST:  # the trailing 1s a scalar gets (a tile keeps its shape)
                rule = (1,) * len(instr.attrs.shape)
            steps.append((kind, instr, rule, instr.operands, instr.results, tuple(dead)))
        self.steps[block] = steps

    def _analyze(self, block: Block) -> tuple[Value, ...]:
        """Free values of ``block`` (used, defined outside); fills dead lists."""
        defined: set[Value] = set(block.args)
        used: dict[Value, int] = {}
        other_use: set[Value] = set(block.yields)  # uses other than as a memory op's pointer
        for i, instr in enumerate(block.instrs):
            inner: list[Value] = []
            for region in instr.regions:
                inner.extend(self._analyze(region))
            self.region_free[instr] = tuple(dict.fromkeys(inner))
            for v in (*instr.operands, *inner):
                used[v] = i
            other_use.update(inner)
            other_use.update(instr.operands[1:] if instr.op in MEMORY else instr.operands)
            defined.update(instr.results)
        self.deferred.update(i for i in block.instrs
                             if i.op is Op.ADDPTR and i.results[0] not in other_use)
        end = len(block.instrs)
        for v in block.yields:
            used[v] = end
        dead: list[list[Value]] = [[] for _ in block.instrs]
        for i, instr in enumerate(block.instrs):
            for v in instr.results:
                last = used.get(v, i)
                if last < end:
                    dead[last].append(v)
        for v in block.args:
            last = used.get(v, 0)
            if last < end:
                dead[last].append(v)
        self.dead[block] = dead
        free = tuple(v for v in used if v not in defined)
        self.free[block] = free
        return free


def _lazy_broadcasts(kernel: Kernel, deferred: set[Instr]) -> set[Instr]:
    """BROADCASTs whose every use is as the base of a deferred ADDPTR: the access broadcasts
    the base against the offsets itself (``DeferredPtr``), so the walker skips making the view
    (a scalar base only gets its trailing 1s)."""
    uses: dict[Value, bool] = {}  # value -> only ever a deferred ADDPTR's base
    for instr in kernel.walk():
        for k, v in enumerate(instr.operands):
            uses[v] = uses.get(v, True) and k == 0 and instr in deferred
        for region in instr.regions:
            for v in region.yields:
                uses[v] = False
    for v in kernel.body.yields:
        uses[v] = False
    return {i for i in kernel.walk() if i.op is Op.BROADCAST and uses.get(i.results[0], False)}


RULE, FOR, IF, WHILE, DEFERRED, LAZY_BROADCAST = range(6)
_KINDS = {Op.FOR: FOR, Op.IF: IF, Op.WHILE: WHILE}
Step = tuple[int, Instr, Any, tuple[Value, ...], tuple[Value, ...], tuple[Value, ...]]

# by body: kernels that share one (the interpreter's twins for other divisibility facts,
# runtime/jit.py) share the plan and its constants
_PLANS: weakref.WeakKeyDictionary[Block, Plan] = weakref.WeakKeyDictionary()


def _fingerprint(kernel: Kernel) -> tuple[int, ...]:
    return (*(id(p.value) for p in kernel.params), *map(id, kernel.walk()))


def plan_of(kernel: Kernel) -> Plan:
    """The kernel's plan, made again if its parameters or instructions changed since."""
    plan = _PLANS.get(kernel.body)
    if plan is None or plan.fingerprint != _fingerprint(kernel):
        plan = _PLANS[kernel.body] = Plan(kernel)
    return plan


def interpret(kernel: Kernel, grid: tuple[int, ...], args: list[Any],
              checks: str | None = None) -> None:
    """Run ``kernel`` on NumPy arrays: ``args[i]`` is the value of ``kernel.params[i]``
    (an ndarray for pointer parameters; writes land in the caller's array).

    ``checks`` ("races") defaults to ``TILES_INTERPRET_CHECKS``."""
    reuse_freed_memory()
    g = tuple(int(x) for x in grid) + (1,) * (3 - len(tuple(grid)))
    if len(g) != 3 or min(g) < 0:
        raise LaunchError(f"{kernel.name}: the grid must have 1 to 3 non-negative sizes, got {grid!r}")
    grid3 = (g[0], g[1], g[2])
    wanted = config.interpreter_checks() if checks is None else set(checks.split(","))
    plan = plan_of(kernel)
    memory = Memory(kernel, list(args), check_races="races" in wanted)
    walker = _Walker(plan)
    launch = Launch(kernel, memory, walker.run_region, plan.free.__getitem__)
    launch.cache = plan.constants
    total = grid3[0] * grid3[1] * grid3[2]
    with np.errstate(all="ignore"):
        for start in range(0, total, plan.chunk):
            progs = Programs.range(start, min(total, start + plan.chunk), grid3)
            env = {p.value: v for p, v in zip(kernel.params, memory.param_values)}
            walker.run_block(Ctx(progs, launch, env), kernel.body)


def _take(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    return x if x.shape[0] == 1 else x[index]


def _owned(x: np.ndarray, n: int) -> np.ndarray:
    """A fresh writable (n, ...) copy of ``x``."""
    return np.array(np.broadcast_to(x, (n, *x.shape[1:])))


def _uniform(x: np.ndarray) -> bool:
    return x.shape[0] == 1 or bool((x == x[0]).all())


class _Walker:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def run_block(self, ctx: Ctx, block: Block) -> list[np.ndarray]:
        env = ctx.env
        for kind, instr, rule, operands, results, dead in self.plan.steps[block]:
            out: Sequence[Any]
            try:
                if kind == RULE:
                    out = rule(ctx, instr, [env[v] for v in operands])
                elif kind == DEFERRED:
                    p, off = (env[v] for v in operands)
                    out = (DeferredPtr(p, off, rule),)
                elif kind == LAZY_BROADCAST:
                    x = env[operands[0]]
                    out = (x.reshape((x.shape[0], *rule)) if x.ndim == 1 else x,)
                elif kind == FOR:
                    out = self.run_for(ctx, instr)
                elif kind == IF:
                    out = self.run_if(ctx, instr)
                else:
                    out = self.run_while(ctx, instr)
            except TilesError:
                raise
            except Exception as e:
                e.add_note(f"while interpreting {instr.op.value} at {instr.loc} "
                           f"in kernel '{ctx.launch.kernel.name}'")
                raise
            except KeyboardInterrupt as e:  # Ctrl-C: say which kernel line was running (innermost)
                if not getattr(e, "__notes__", None):
                    e.add_note(f"interrupted while interpreting {instr.op.value} at {instr.loc} "
                               f"in kernel '{ctx.launch.kernel.name}'\n    {instr.loc.source}")
                raise
            if len(results) == 1:
                env[results[0]] = out[0]
            elif results:
                env.update(zip(results, out))
            for v in dead:
                del env[v]
        return [env[v] for v in block.yields]

    def run_region(self, ctx: Ctx, block: Block, env: dict[Any, np.ndarray],
                   args: list[np.ndarray]) -> list[np.ndarray]:
        """Run ``block`` on ``env`` (updated in place) with its args bound to ``args``."""
        for a, v in zip(block.args, args):
            env[a] = v
        return self.run_block(Ctx(ctx.progs, ctx.launch, env) if env is not ctx.env else ctx, block)

    # ------------------------------------------------------------ IF

    def run_if(self, ctx: Ctx, instr: Instr) -> list[np.ndarray]:
        c = ctx.env[instr.operands[0]]
        then_b, else_b = instr.regions
        if c.shape[0] == 1 or c.all() or not c.any():
            return self.run_region(ctx, then_b if c[0] else else_b, ctx.env, [])
        t, f = np.flatnonzero(c), np.flatnonzero(~c)
        rt = self.run_block(ctx.subset(t, self.plan.free[then_b]), then_b)
        rf = self.run_block(ctx.subset(f, self.plan.free[else_b]), else_b)
        out = []
        for a, b in zip(rt, rf):
            merged = np.empty((ctx.P, *a.shape[1:]), a.dtype)
            merged[t] = a
            merged[f] = b
            out.append(merged)
        return out

    # ------------------------------------------------------------ FOR

    def run_for(self, ctx: Ctx, instr: Instr) -> list[np.ndarray]:
        env = ctx.env
        lb, ub, step = (env[v] for v in instr.operands[:3])
        carried = [env[v] for v in instr.operands[3:]]
        body = instr.regions[0]
        dt = lb.dtype
        if _uniform(lb) and _uniform(ub) and _uniform(step):
            lo, hi, st = int(lb[0]), int(ub[0]), int(step[0])
            if st == 0:
                self._zero_step(ctx, instr)
            for i in range(lo, hi, st):
                carried = self.run_region(ctx, body, env, [np.array([i], dt), *carried])  # i fits: lo <= i < hi
            return carried
        count = ctx.P
        lo64, hi64, st64 = (np.broadcast_to(x, (count,)).astype(np.int64) for x in (lb, ub, step))
        if (st64 == 0).any():
            self._zero_step(ctx, instr)
        trips = np.maximum(0, np.where(st64 > 0, -((lo64 - hi64) // st64), -((hi64 - lo64) // -st64)))
        owned = False
        for t in range(int(trips.max(initial=0))):
            iv = (lo64 + t * st64).astype(dt)
            active = trips > t
            if active.all():
                carried = self.run_region(ctx, body, env, [iv, *carried])
                owned = False
                continue
            idx = np.flatnonzero(active)
            if not owned:
                carried = [_owned(x, count) for x in carried]
                owned = True
            sub = ctx.subset(idx, self.plan.free[body])
            new = self.run_region(sub, body, sub.env, [iv[idx], *(x[idx] for x in carried)])
            for full, part in zip(carried, new):
                full[idx] = part
        return carried

    def _zero_step(self, ctx: Ctx, instr: Instr) -> None:
        raise KernelRuntimeError(f"for loop with step 0 in kernel '{ctx.launch.kernel.name}'",
                                 instr.loc)

    # ------------------------------------------------------------ WHILE

    def run_while(self, ctx: Ctx, instr: Instr) -> list[np.ndarray]:
        cond_b, body_b = instr.regions
        carried = [ctx.env[v] for v in instr.operands]
        free = self.plan.region_free[instr]
        count = ctx.P
        active: np.ndarray | None = None  # None: every program of ctx
        sub = ctx
        while True:
            cur = carried if active is None else [x[active] for x in carried]
            c = self.run_region(sub, cond_b, sub.env, cur)[0]
            if c.shape[0] == 1 or c.all() or not c.any():
                if not c[0]:
                    break
            else:
                keep = np.flatnonzero(c)
                if active is None:
                    carried = [_owned(x, count) for x in carried]
                    active = keep
                else:
                    active = active[keep]
                cur = [_take(x, keep) for x in cur]
                sub = ctx.subset(active, free)
            new = self.run_region(sub, body_b, sub.env, cur)
            if active is None:
                carried = new
            else:
                for full, part in zip(carried, new):
                    full[active] = part
        return carried
