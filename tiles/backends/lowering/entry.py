"""The entry point of the shared lowering: a kernel and an ``Emitter`` in, a typed ``Lowered`` out.

The rule modules register themselves in ``lower.RULES`` when imported; the order below is
the order of registration, and later modules may take an op over from earlier ones (the
tensor-core rules wrap DOT, FOR, LOAD and the elementwise rules, falling back to the plain
ones), so it is written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.ir import Kernel
from ..base import Options
from . import memory, reductions, relayout, sorting, tensorcore  # noqa: F401  (register their rules)
from .emitter import Emitter
from .lower import Lowering
from .prepare import prepare


@dataclass(frozen=True)
class Lowered:
    """One kernel's code and the launch facts the lowering fixed."""

    code: str            # what ``Emitter.finish`` returned: OpenCL C, LLVM IR text, ...
    entry: str           # the kernel's function name in ``code``
    threads: int         # threads per program (``Options.threads``)
    shared_bytes: int    # work-group local / dynamic shared memory per program
    not_applied: tuple[str, ...] = ()  # options the code does not follow, each with its file:line


def lower(kernel: Kernel, emitter: Emitter, options: Options) -> Lowered:
    """Lower ``kernel`` onto ``emitter`` with ``options.threads(emitter.target)`` threads per program."""
    threads = options.threads(emitter.target)
    walker = Lowering(prepare(kernel, emitter), emitter, threads, options)
    code = walker.run()
    return Lowered(code, emitter.name or kernel.name, threads, walker.local_bytes, tuple(walker.not_applied))
