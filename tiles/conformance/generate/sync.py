"""Synchronization statements for generated programs: forms real Triton kernels use, each with an
outcome every order of the programs agrees on.

* ``lock``: a spin lock (``atomic_cas`` acquire ... ``debug_barrier`` ... ``atomic_xchg`` release)
  around a plain load / add / store of a tile shared by every program (integers: any order sums
  alike);
* ``ticket``: a scalar ``atomic_add(counter, 1)`` whose returned slot every thread uses to place
  the program id (compared per element as a multiset over the slots: a permutation);
* ``scalar_add``: the integer sum of a tile added with a scalar atomic, once or in a loop;
* ``publish``: program 0 stores a tile, fences and raises a flag; the others spin on it
  (a volatile load or an atomic read) and read the tile, which joins the pool (every program
  holds program 0's values, so it flows on exactly);
* ``extreme``: float32 ``atomic_max``/``atomic_min`` of negative values on one address per row
  (two negatives compared).

Each form's ``sem`` and ``scope`` are drawn among Triton's; a program with a sync statement
launches 4 to 64 programs, so that they contend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hypothesis import strategies as st

from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..compare import EXACT, EXACT_ZERO_SIGN_FREE, MULTISET, Rule, ulp
from .draws import Draw, choose
from .program import Node, Program, tl_name


class Builder(Protocol):
    """What a sync statement needs of the program being drawn (``strategies.Builder``)."""

    draw: Draw
    program: Program

    def fresh(self) -> str: ...

    def pick(self, ok: Callable[[Node], bool], avoid: Node | None = None) -> Node | None: ...

    def add(self, node: Node, lines: list[str], uses: tuple[str, ...], pooled: bool = True,
            effect: bool = False) -> Node: ...

FORMS = ("lock", "ticket", "scalar_add", "publish", "extreme")
SEMS = ("acq_rel", "relaxed", "acquire", "release")
SCOPES = ("gpu", "sys")  # these atomics are shared by every program: cta scope would not cover them
PROGRAMS = (4, 16, 64)


@dataclass(frozen=True)
class Sync:
    """One sync statement: its buffers are the kernel parameters ``<name>_<role>_ptr`` (``BUFFERS``)."""

    name: str
    form: str
    dtype: DType
    ulps: int = 0                 # of the value ``publish`` stores (an exp there is inexact)
    zero_sign_free: bool = False  # that value came through a float max/min

    def params(self) -> list[str]:
        return [f"{self.name}_{b}_ptr" for b in BUFFERS[self.form]]


# form -> its buffers, in parameter order
BUFFERS: dict[str, tuple[str, ...]] = {
    "lock": ("lock", "mem"), "ticket": ("cnt", "slots"), "scalar_add": ("acc",),
    "publish": ("pub", "flag"), "extreme": ("best",),
}


def statement(b: Builder) -> Node | None:
    """One sync statement drawn into ``b``'s program (None when nothing in the pool fits)."""
    form = choose(b.draw, FORMS)
    sem, scope = choose(b.draw, SEMS), choose(b.draw, SCOPES)
    opts = f'sem="{sem}", scope="{scope}"'
    name = b.fresh()
    if form == "ticket":
        lines = [f"{name} = tl.atomic_add({name}_cnt_ptr, 1, {opts})",
                 f"tl.store({name}_slots_ptr + (rows * N + cols) * tl.num_programs(0) + {name}, "
                 f"pid + rows * 0 + cols * 0, mask={name} < tl.num_programs(0))"]
        return _added(b, Sync(name, form, D.int32), Node(name, D.int32, "MN"), lines, ())
    if form in ("lock", "scalar_add"):
        v = b.pick(lambda n: n.dtype.is_int and not n.dtype.is_bool)
        if v is None:
            return None
        wide = D.int64 if v.dtype.bits == 64 else D.int32
        value = f"tl.broadcast_to({v.name}, (M, N)).to({tl_name(wide)})"
        if form == "lock":
            lines = [f"while tl.atomic_cas({name}_lock_ptr, 0, 1, {_sem(sem, 'acquire')}, scope=\"{scope}\") == 1:",
                     "    pass",
                     f"{name}_cur = tl.load({name}_mem_ptr + rows * N + cols)",
                     f"tl.store({name}_mem_ptr + rows * N + cols, {name}_cur + {value})",
                     "tl.debug_barrier()",
                     f"tl.atomic_xchg({name}_lock_ptr, 0, {_sem(sem, 'release')}, scope=\"{scope}\")"]
        elif b.draw(st.booleans()):
            lines = [f"{name}_s = tl.sum(tl.sum({value}, axis=1), axis=0)",
                     f"tl.atomic_add({name}_acc_ptr + pid % 2, {name}_s, {opts})"]
        else:  # scalar atomics inside a loop, after a loop-carried scalar
            lines = [f"{name}_s = tl.sum(tl.sum({value}, axis=1), axis=0) * 0",
                     "for it in range(trips + 1):",
                     f"    {name}_s += tl.sum(tl.sum({value}, axis=1), axis=0) + it",
                     f"    tl.atomic_add({name}_acc_ptr + it % 2, {name}_s, {opts})"]
        return _added(b, Sync(name, form, wide), Node(name, wide, "MN"), lines, (v.name,))
    if form == "publish":
        v = b.pick(lambda n: not n.dtype.is_bool)
        if v is None:
            return None
        wait = (f"    while tl.load({name}_flag_ptr, volatile=True) == 0:" if b.draw(st.booleans())
                else f"    while tl.atomic_add({name}_flag_ptr, 0, {_sem(sem, 'acquire')}, scope=\"{scope}\") == 0:")
        lines = ["if pid == 0:",
                 f"    tl.store({name}_pub_ptr + rows * N + cols, tl.broadcast_to({v.name}, (M, N)))",
                 "    tl.debug_barrier()",
                 f"    tl.atomic_xchg({name}_flag_ptr, 1, {_sem(sem, 'release')}, scope=\"{scope}\")",
                 "else:", wait, "        pass",
                 f"{name} = tl.load({name}_pub_ptr + rows * N + cols, volatile=True)"]
        node = Node(name, v.dtype, "MN", v.ulps, v.zero_sign_free, v.from_mul)
        _bump_programs(b)
        b.program.syncs.append(Sync(name, form, v.dtype, v.ulps, v.zero_sign_free))
        return b.add(node, lines, (v.name,), pooled=True, effect=True)
    v = b.pick(lambda n: n.exact)
    if v is None:
        return None
    kind = choose(b.draw, ["max", "min"])
    x = f"tl.broadcast_to({v.name}, (M, N)).to(tl.float32)"
    lines = [f"{name}_x = -tl.abs(tl.where({x} == {x}, {x}, 1.5))",  # negatives (NaN made 1.5 first)
             f"tl.atomic_{kind}({name}_best_ptr + rows + cols * 0, {name}_x, mask=valid, {opts})"]
    return _added(b, Sync(name, form, D.float32), Node(name, D.float32, "MN"), lines, (v.name,))


def _sem(sem: str, needed: str) -> str:
    """A lock's acquire (or release) keeps at least that order: relaxed would be a user's bug."""
    return f'sem="{sem if sem in (needed, "acq_rel") else "acq_rel"}"'


def _bump_programs(b: Builder) -> None:
    b.program.programs = max(b.program.programs, choose(b.draw, PROGRAMS))


def _added(b: Builder, sync: Sync, node: Node, lines: list[str], uses: tuple[str, ...]) -> Node:
    _bump_programs(b)
    b.program.syncs.append(sync)
    return b.add(node, lines, uses, pooled=False, effect=True)


def launch_buffers(draw: Any, program: Program, array: Any) -> dict[str, Any]:
    """The initial buffers of every sync statement (``array(draw, dtype, size)`` draws values)."""
    import numpy as np
    m, n, p = program.m, program.n, program.programs
    out: dict[str, Any] = {}
    for s in program.syncs:
        names = dict(zip(BUFFERS[s.form], s.params()))
        if s.form == "lock":
            out[names["lock"]] = np.zeros(1, np.int32)
            out[names["mem"]] = array(draw, s.dtype, m * n)
        elif s.form == "ticket":
            out[names["cnt"]] = np.zeros(1, np.int32)
            out[names["slots"]] = np.full((m * n, p), -1, np.int32)
        elif s.form == "scalar_add":
            out[names["acc"]] = array(draw, s.dtype, 2)
        elif s.form == "publish":
            out[names["pub"]] = np.zeros(m * n, s.dtype.np)
            out[names["flag"]] = np.zeros(1, np.int32)
        else:
            start = np.abs(array(draw, D.float32, m).astype(np.float64))
            out[names["best"]] = np.where(np.isfinite(start), -start, -1e30).astype(np.float32)
    return out


def rules(program: Program) -> dict[str, Any]:
    """Parameter name -> comparison rule of every buffer a sync statement writes."""
    out: dict[str, Any] = {}
    for s in program.syncs:
        for role, param in zip(BUFFERS[s.form], s.params()):
            out[param] = MULTISET if role == "slots" else EXACT_ZERO_SIGN_FREE if role == "best" else EXACT
            if role == "pub" and (s.ulps or s.zero_sign_free):  # the published value's own rule
                rule = ulp(s.ulps) if s.ulps else EXACT
                out[param] = Rule(rule.kind, rule.ulps, signed_zero=False) if s.zero_sign_free else rule
    return out
