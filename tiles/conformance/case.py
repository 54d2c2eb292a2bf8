"""A conformance case: one kernel launch whose outputs are compared across backends."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tiles.runtime.jit import LAUNCH_KEYWORDS, JITFunction

from .compare import Rule
from .sentinel import prefill

ArgsMaker = Callable[[np.random.Generator], list[Any]]
# (launch args) -> {output index: per-element absolute error bound}
BoundsMaker = Callable[[list[Any]], dict[int, np.ndarray]]
# (launch args before, reference args after, backend args after) -> None or what is wrong
Checker = Callable[[list[Any], list[Any], list[Any]], "str | None"]


@dataclass
class Case:
    """``outputs`` maps the position of each array argument the kernel writes to its rule."""

    family: str
    name: str
    kernel: JITFunction | None
    make_args: ArgsMaker
    grid: tuple[int, ...]
    outputs: dict[int, Rule]
    constexprs: dict[str, Any] = field(default_factory=dict)
    bounds: BoundsMaker | None = None
    check: Checker | None = None
    seed: int = 0
    # a self-checking program run on the backend instead of a launch compared with the reference
    self_check: Callable[[Any], None] | None = None
    # for a self-checking case: a standalone script that runs it on ``BACKEND`` (its reproducer)
    self_check_script: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"

    def args(self) -> list[Any]:
        args = self.make_args(np.random.default_rng(self.seed))
        if self.kernel is not None and self.outputs:
            self.prefill(args)
        return args

    def prefill(self, args: list[Any]) -> None:
        """``sentinel.prefill`` for this case's launch arguments (nothing when the kernel does not
        trace: the run reports that)."""
        assert self.kernel is not None
        try:
            kernel_ir = traced(self.kernel, args, self.constexprs)
        except Exception:
            return
        prefill(kernel_ir, self.kernel.fn, args, self.outputs)


def traced(kernel: JITFunction, args: list[Any], constexprs: dict[str, Any]) -> Any:
    """The IR of ``kernel`` traced for these launch arguments (nothing is compiled or launched)."""
    constexprs = {k: v for k, v in constexprs.items() if k not in LAUNCH_KEYWORDS}
    bound = kernel.signature.bind(*args, **constexprs)
    bound.apply_defaults()
    return kernel.trace(kernel.specialize(dict(bound.arguments)))


def case_seed(run_seed: int, case_id: str) -> int:
    """The input seed of one case in a run: depends only on the run's seed and the case's id, so
    one case replays alone (``-k``) with the inputs it had in the whole run."""
    digest = hashlib.sha256(f"{run_seed}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def case(family: str, name: str, kernel: JITFunction, make_args: ArgsMaker, grid: tuple[int, ...],
         outputs: dict[int, Rule], **extra: Any) -> Case:
    return Case(family, name, kernel, make_args, grid, outputs, **extra)
