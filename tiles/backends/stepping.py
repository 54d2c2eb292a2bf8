"""Stepping mode: a kernel's Python runs for real, one program at a time, on the interpreter's values.

``TILES_INTERPRET=step`` (or ``backend="step"``, ``TILES_BACKEND=step``) selects it.  Each launch:

1. traces the kernel as usual (errors and types are the tracer's);
2. runs the programs ``TILES_PROGRAMS`` selects (all by default) one at a time through the
   kernel's *stepping* version (``step_rewrite.py``: Python ``for``/``while``/``if``), where every
   ``tl`` op is executed at once by the interpreter's own rules (``eager.py``), so ``breakpoint()``
   stops on the kernel's line with every local holding this program's data;
3. runs the other programs at full speed in the vectorized interpreter, in program-id order
   around the stepped ones (programs before the first selected one, then it, then the programs
   up to the next selected one, ...);
4. checks memory as the interpreter does (bounds, ``TILES_INTERPRET_CHECKS=races``) and reports
   every write of a watched element (``TILES_WATCH``, ``watch.py``) with file:line and program
   id, stopping in pdb when the writer is a stepped program.

``options(programs=..., watch=..., watch_break=...)`` sets the same from Python for a ``with`` block.
"""

from __future__ import annotations

import os
import pdb
import signal
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import config
from ..core.builder import KERNEL_CODES, tracing
from ..core.errors import LaunchError
from ..core.ir import Block, Kernel, Param, TileType, Value
from ..core.live import DataNeededError, LiveValue
from ..interp.allocator import reuse_freed_memory
from ..interp.context import Ctx, Launch
from ..interp.eager import EagerBuilder, StepSession
from ..interp.executor import _Walker, plan_of
from ..interp.memory import Memory, Site
from ..interp.programs import Programs
from ..interp.step_rewrite import stepping_function
from ..interp.watch import WatchedMemory, WatchHit, parse, print_hit
from ..language import control, step_control
from ..language.constexpr import as_constexpr
from ..language.tensor import tensor
from .base import Backend, CompiledKernel, LaunchArg
from .interpreter import InterpreterBackend, host_array

_INTERNAL = ("tiles", "numpy", "ml_dtypes")


def _internal(frame: Any) -> bool:
    name = frame.f_globals.get("__name__", "") or ""
    return name.split(".")[0] in _INTERNAL


class KernelPdb(pdb.Pdb):
    """pdb that stops only in the kernel's frames and the user's own code, never inside tiles
    (or code tiles calls): ``step`` on ``x = tl.load(...)`` goes to the next kernel line, and
    into a ``@jit`` helper's first line."""

    def stop_here(self, frame: Any) -> bool:
        name = frame.f_code.co_name
        if name in ("<lambda>", "<module>", "__tiles_step_factory") and frame.f_back is not None \
                and _internal(frame.f_back):
            return False  # operands of `and`/`or`/`x if c else y`; a helper's first rewrite
        if frame.f_code not in KERNEL_CODES:
            f = frame
            while f is not None and f.f_code not in KERNEL_CODES:
                if _internal(f):
                    return False
                f = f.f_back
        return super().stop_here(frame)


class _Options(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict[str, Any]] = []


_options = _Options()


@contextmanager
def options(programs: Any = None, watch: str | None = None, watch_break: bool | None = None
            ) -> Iterator[None]:
    """Stepping options for the launches of a ``with`` block (they win over the environment):
    ``programs``: ``"1,0,0"``, ``[(1, 0, 0), 2]`` or ``"all"``; ``watch``: as ``TILES_WATCH``;
    ``watch_break``: stop in pdb at a watched write of a stepped program (default True)."""
    _options.stack.append({"programs": programs, "watch": watch, "watch_break": watch_break})
    try:
        yield
    finally:
        _options.stack.pop()


def _option(name: str, env: Any) -> Any:
    for frame in reversed(_options.stack):
        if frame[name] is not None:
            return frame[name]
    return env


def parse_programs(spec: Any, grid: tuple[int, int, int]) -> set[int] | None:
    """Linear ids of the selected programs (None: all).  ``spec``: ``"x[,y[,z]]"`` items separated
    by ``;`` (``"1,0,0"``, ``"0;3"``), ``"all"``, or a list of ints / (x, y, z) tuples."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return None
    items: list[Any]
    if isinstance(spec, str):
        try:
            items = [tuple(int(v) for v in part.split(",")) for part in spec.replace(" ", "").split(";") if part]
        except ValueError:
            raise LaunchError(f"TILES_PROGRAMS={spec!r}: expected program ids x[,y[,z]] separated by ';' "
                              "(e.g. 1,0,0 or 0;3), or all") from None
    else:
        items = [spec] if isinstance(spec, int) or (isinstance(spec, tuple) and
                                                     all(isinstance(v, int) for v in spec)) else list(spec)
    out = set()
    gx, gy, gz = grid
    for item in items:
        pid = (item,) if isinstance(item, int) else tuple(item)
        if not 1 <= len(pid) <= 3:
            raise LaunchError(f"TILES_PROGRAMS: {item!r} is not a program id (x, y, z)")
        x, y, z = (*pid, 0, 0)[:3]
        if not (0 <= x < gx and 0 <= y < gy and 0 <= z < gz):
            raise LaunchError(f"TILES_PROGRAMS: program {(x, y, z)} is outside the grid {grid}")
        out.add(x + gx * (y + gy * z))
    return out


def _breakpoint_hook(launch: _StepLaunch) -> Any:
    def hook(*args: Any, **kwargs: Any) -> None:
        name = os.environ.get("PYTHONBREAKPOINT")
        if name is not None and name not in ("", "pdb.set_trace", "pdb.set_trace()"):
            return sys.__breakpointhook__(*args, **kwargs)
        debugger = launch.debugger()
        debugger.set_trace(sys._getframe(1))
    return hook


def stepping_version(jit_fn: Any) -> Any:
    """The @jit function's Python as stepping mode runs it (``interp/step_rewrite.py``)."""
    return stepping_function(jit_fn.fn, control, step_control)


class _StepLaunch:
    """One launch in stepping mode."""

    def __init__(self, compiled: CompiledKernel, grid: tuple[int, int, int], values: list[Any]) -> None:
        self.kernel: Kernel = compiled.ir
        self.fn = stepping_version(compiled.extra["jit_function"])
        self.specs = compiled.extra["specs"]
        self.regroup = compiled.extra["regroup"]  # runtime/expanded_args.regroup
        self.debug = compiled.options.debug
        self.step_only = compiled.extra.get("step_only")
        self.grid = grid
        watch = _option("watch", config.watch())
        races = "races" in config.interpreter_checks()
        if watch:
            memory: Memory = WatchedMemory(self.kernel, values, check_races=races)
            memory.watches = parse(watch, memory)  # type: ignore[attr-defined]
            memory.on_hit = self.on_hit  # type: ignore[attr-defined]
        else:
            memory = Memory(self.kernel, values, check_races=races)
        self.memory = memory
        self.watch_break = bool(_option("watch_break", config.watch_break()))
        self.hits: list[WatchHit] = []
        self.stepping: Programs | None = None

    def debugger(self) -> pdb.Pdb:
        p = KernelPdb()
        if self.stepping is not None:
            x, y, z = self.stepping.pid(0)
            p.prompt = f"(Pdb {x},{y},{z}) "
        return p

    def on_hit(self, hit: WatchHit, site: Site) -> None:
        self.hits.append(hit)
        LAST_HITS[:] = self.hits
        print_hit(hit)
        if not (self.watch_break and self.stepping is not None):
            return
        if os.environ.get("PYTHONBREAKPOINT", "") == "0":
            return
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code not in KERNEL_CODES:
            frame = frame.f_back
        if frame is None:
            return
        p = self.debugger()
        p.message("tiles: stopped after the write (the next kernel line follows)")
        p.reset()
        f: Any = frame
        while f is not None:
            f.f_trace = p.trace_dispatch
            p.botframe = f
            f = f.f_back
        p.set_next(frame)
        sys.settrace(p.trace_dispatch)

    # ---------------------------------------------------------------- running
    def run(self) -> None:
        gx, gy, gz = self.grid
        total = gx * gy * gz
        selected = parse_programs(_option("programs", config.step_programs()), self.grid)
        where = self.step_only
        if where is not None and selected is not None:
            print(f"tiles: stepping every program of '{self.kernel.name}', not only TILES_PROGRAMS: "
                  f"its code uses data in Python ({where}), so it cannot run vectorized", file=sys.stderr)
            selected = None
        chosen = range(total) if selected is None else sorted(selected)
        hook = _breakpoint_hook(self)
        saved = sys.breakpointhook
        sys.breakpointhook = hook
        # pdb's `continue` makes Ctrl-C stop in the debugger; the launch's end gives it back
        main = threading.current_thread() is threading.main_thread()
        sigint = signal.getsignal(signal.SIGINT) if main else None
        try:
            with np.errstate(all="ignore"):
                done = 0
                for lin in chosen:
                    if lin > done:
                        self._vectorized(np.arange(done, lin))
                    self._step(lin)
                    done = lin + 1
                if done < total:
                    self._vectorized(np.arange(done, total))
        finally:
            sys.breakpointhook = saved
            if main and signal.getsignal(signal.SIGINT) is not sigint:
                signal.signal(signal.SIGINT, sigint)

    def _vectorized(self, linear: np.ndarray) -> None:
        plan = plan_of(self.kernel)
        walker = _Walker(plan)
        launch = Launch(self.kernel, self.memory, walker.run_region, plan.free.__getitem__)
        for start in range(0, len(linear), plan.chunk):
            progs = Programs(linear[start:start + plan.chunk], self.grid)
            env = {p.value: v for p, v in zip(self.kernel.params, self.memory.param_values)}
            walker.run_block(Ctx(progs, launch, env), self.kernel.body)

    def _step(self, lin: int) -> None:
        progs = Programs(np.array([lin], np.int64), self.grid)
        session = StepSession(self.kernel, self.memory, progs, self.debug)
        by_name = {p.name: (p, v) for p, v in zip(self.kernel.params, self.memory.param_values)}
        leaves: list[Any] = []
        for spec in self.specs:
            if spec.constexpr:
                leaves.append(as_constexpr(spec.value))
            else:
                param, value = by_name[spec.name]
                leaves.append(tensor(LiveValue(param.value.type, value, session)))
        self.stepping = progs
        try:
            with tracing(EagerBuilder(session, stepping_version)):
                self.fn(*self.regroup(self.specs, leaves))
        except Exception as e:
            e.add_note(f"in kernel '{self.kernel.name}', {progs.describe(0)} (stepping mode)")
            raise
        finally:
            self.stepping = None


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


# kernels whose code needs data while traced: every program is stepped (the IR has no body)
_STEP_ONLY: weakref.WeakKeyDictionary[Kernel, Any] = weakref.WeakKeyDictionary()

# the watch hits of the latest launch with watches (for tests and post-mortem scripts)
LAST_HITS: list[WatchHit] = []


class StepBackend(InterpreterBackend):
    """The interpreter, run program by program on the kernel's own Python (see the module docstring)."""

    name = "step"
    divisibility_free = False  # each launch's specs go with its compiled kernel (below)
    wants_function = True  # runtime/jit.py hands compile() the @jit function and the launch's specs

    def trace(self, jit_fn: Any, specs: Sequence[Any]) -> Kernel:
        """The kernel's IR, traced with ``breakpoint()`` silenced (it stops when the programs run).
        Kernel code that needs data (``x.numpy()``, ``float(x)``) cannot be traced: then the IR is
        only the parameters, and every program of each launch is stepped."""
        saved = sys.breakpointhook
        sys.breakpointhook = _ignore
        try:
            return jit_fn.trace(specs)  # type: ignore[no-any-return]
        except DataNeededError as e:
            params = [Param(s.name, Value(TileType(s.type), s.name), s.divisibility)
                      for s in specs if not s.constexpr]
            constants = {s.name: s.value for s in specs if s.constexpr}
            kernel = Kernel(jit_fn.__name__, params, Block(), jit_fn.loc, constants)
            _STEP_ONLY[kernel] = e.loc
            return kernel
        finally:
            sys.breakpointhook = saved

    def compile(self, kernel: Any, options: Any) -> CompiledKernel:
        compiled = super().compile(kernel, options)
        if kernel in _STEP_ONLY:
            compiled.extra["step_only"] = _STEP_ONLY[kernel]
        return compiled

    # not served from the disk cache (``Backend.load_cached``: runtime/cache.is_cacheable):
    # a kernel traced as parameters only must never be taken for the real IR
    load_cached = Backend.load_cached  # type: ignore[assignment]

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        if "jit_function" not in compiled.extra:
            raise LaunchError(f"{compiled.name}: stepping mode runs kernels launched as "
                              "kernel[grid](...) from their @tiles.jit function")
        reuse_freed_memory()
        g = tuple(int(x) for x in grid) + (1,) * (3 - len(tuple(grid)))
        if len(g) != 3 or min(g) < 0:
            raise LaunchError(f"{compiled.name}: the grid must have 1 to 3 non-negative sizes, got {grid!r}")
        values = [host_array(a.value) if a.is_pointer else a.value for a in args]
        _StepLaunch(compiled, (g[0], g[1], g[2]), values).run()
