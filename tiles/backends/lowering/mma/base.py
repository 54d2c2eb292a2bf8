"""The tensor-core lowering: the shared walk with a second rule table consulted first.

``TensorCoreLowering`` holds the kernel's MMA plan (``plan.py``) and the state its rules
share while walking; ``TC_RULES`` maps the ops it takes over (DOT, FOR, LOAD, and the ops
that can run on fragments) to rules that fall back to the shared ``RULES`` whenever the
plan leaves an instruction alone.  The shared table is never modified, nor is ``TC_RULES`` by a
target: a target's own rules come with its ``MMAExtension`` (``extension.py``) and go first for
that lowering only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....core.ir import Instr, Kernel, Value
from ....core.ops import Op
from ...base import Options
from ..emitter import Handle
from ..layout import Layout
from ..lower import Lowering
from .emitter import TensorCoreEmitter
from .extension import NO_EXTENSION, MMAExtension
from .plan import Plan, build_plan

TensorCoreRule = Callable[["TensorCoreLowering", Instr], list[Any]]
TC_RULES: dict[Op, TensorCoreRule] = {}


def tc_rule(*ops: Op) -> Callable[[TensorCoreRule], TensorCoreRule]:
    def register(fn: TensorCoreRule) -> TensorCoreRule:
        for op in ops:
            TC_RULES[op] = fn
        return fn
    return register


class TensorCoreState:
    """What the tensor-core rules of one kernel share while it is walked."""

    def __init__(self, kernel: Kernel, emitter: TensorCoreEmitter, threads: int) -> None:
        self.plan: Plan = build_plan(kernel, emitter, threads)
        self.mma: dict[Value, list[Handle]] = {}
        self.async_loads: set[Instr] = set()          # LOADs that cp.async feeds (pipeline.py)
        self.async_slot: dict[Instr, Handle] = {}     # DOT -> byte base of its current stage
        self.afrags: dict[Instr, list[list[list[Handle]]]] = {}  # DOT -> hoisted A fragments
        self.wg_keep: dict[Instr, int] = {}           # DOT -> wgmma groups left in flight
        self.wg_inflight: list[Value] = []            # fragments an in-flight group still writes (kept_last)
        self.wg_staged: dict[Instr, dict[int, Handle]] = {}  # DOT -> operand -> byte base in its stage
        self.defs = {r: i for i in kernel.walk() for r in i.results}
        self.stores: dict[Instr, Layout] = {}  # STOREs written from fragments (epilogue.py) -> their layout
        # set by the extension's ``setup`` (CUDA: ``cuda/hopper/``), else None:
        self.producer: Any = None  # a warpgroup split off to issue copies (``split_off(lowering)``)
        self.persistent: Any = None  # programs that each run several of the kernel's (``lower_programs``)
        self.scratch_base = 0  # while a pipelined body is lowered: where its other local memory starts
        self.unshifted: dict[Instr, int] = {}  # ... and the base of the ops that address the stages
        self.wg_pending: set[Value] = set()  # products a run-time IF's branch waits for before reading
        self.after_wait: dict[Instr, Callable[[], None]] = {}  # DOT -> run right after its wgmma wait (pipeline.py)


class TensorCoreLowering(Lowering):
    """``Lowering`` on an emitter with tensor cores; the extension's rules, then ``TC_RULES``,
    take precedence."""

    e: TensorCoreEmitter

    def __init__(self, kernel: Kernel, emitter: TensorCoreEmitter, threads: int, options: Options,
                 ext: MMAExtension = NO_EXTENSION) -> None:
        super().__init__(kernel, emitter, threads, options)
        self.ext = ext
        self.rules: dict[Op, TensorCoreRule] = {**TC_RULES, **ext.rules}
        self.tc = TensorCoreState(kernel, emitter, threads)
        assert not self.tc.plan.wgmma or ext.warpgroup is not None, "warpgroup MMAs planned without a Warpgroup"
        if self.tc.plan.wgmma and any(d.operands[0].type.element.itemsize == 1 for d in self.tc.plan.dots):
            self.max_vec = max(self.max_vec, 16)  # 8-bit operands: 16 bytes per chunk, per cp.async

    def begin_body(self) -> None:
        if self.tc.producer is not None:
            self.tc.producer.split_off(self)

    def lower_body(self) -> None:
        if self.tc.persistent is None:
            super().lower_body()
        else:
            self.tc.persistent.lower_programs(self)

    def lower_instr(self, instr: Instr) -> list[list[Handle]]:
        fn = self.rules.get(instr.op)
        if not self.tc.scratch_base:
            return super().lower_instr(instr) if fn is None else fn(self, instr)
        saved = self.e.local_base
        self.e.local_base = self.tc.unshifted.get(instr, self.tc.scratch_base)
        try:
            return super().lower_instr(instr) if fn is None else fn(self, instr)
        finally:
            self.e.local_base = saved
