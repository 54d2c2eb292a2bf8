"""What an interpreter rule sees: the program set it serves and the launch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.ir import Block, Instr, Kernel
from .memory import Memory, Site
from .programs import Programs

Env = dict[Any, Any]  # Value -> np.ndarray (or memory.DeferredPtr)
RegionRunner = Callable[["Ctx", Block, Env, list[np.ndarray]], list[np.ndarray]]


class Launch:
    """State shared by every program of one launch."""

    def __init__(self, kernel: Kernel, memory: Memory, run_region: RegionRunner,
                 free_vars: Callable[[Block], tuple[Any, ...]]) -> None:
        self.kernel = kernel
        self.memory = memory
        self.run_region = run_region
        self.free_vars = free_vars
        self.cache: dict[Instr, tuple[np.ndarray, ...]] = {}  # results of CONST/ARANGE


class Ctx:
    """The programs that the current values' leading axis runs over."""

    __slots__ = ("progs", "launch", "env")

    def __init__(self, progs: Programs, launch: Launch, env: Env) -> None:
        self.progs = progs
        self.launch = launch
        self.env = env  # the values visible to the block being run

    @property
    def P(self) -> int:
        return self.progs.P

    def subset(self, index: np.ndarray, values: tuple[Any, ...]) -> Ctx:
        """The programs ``index`` of this set, seeing ``values`` restricted to them."""
        env = {v: self.env[v] if self.env[v].shape[0] == 1 else self.env[v][index] for v in values}
        return Ctx(self.progs.subset(index), self.launch, env)

    def site(self, instr: Instr, what: str) -> Site:
        return Site(self.launch.kernel.name, instr.loc, what, self.progs)
