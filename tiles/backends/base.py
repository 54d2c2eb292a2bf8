"""The lowering interface every backend implements.

A backend describes its target (``Target``), turns a traced ``Kernel`` into a
``CompiledKernel`` through an ordered set of named stages (each output is kept in
``asm[stage]`` and can be printed with ``TILES_DUMP=<stage>``), and launches it.
Arguments reach ``launch`` already classified by the jit layer: one ``LaunchArg``
per kernel parameter.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .. import config
from ..core import dtypes as D
from ..core.dtypes import DType
from ..core.ir import Kernel
from ..core.ops import Op
from .launch_facts import DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS


@dataclass(frozen=True)
class Target:
    """What a device can do; backends read it, the conformance suite reports it."""

    backend: str
    arch: str = ""
    warp_size: int = 32
    max_threads_per_block: int = 1024
    shared_memory: int = 48 * 1024
    dtypes: frozenset[DType] = D.LOWERED_DTYPES
    unsupported_ops: frozenset[Op] = frozenset()
    # float32 ops computed by hardware approximations, with the bound their results keep:
    # (op, rtol, atol) means |got - exact| <= rtol * |exact| + atol.  Declared, not hidden.
    # ``op`` is an Op or the name of a MATH_FN function (core/mathfns.py), e.g. "fast_expf".
    approximate: tuple[tuple[Op | str, float, float], ...] = ()


@dataclass(frozen=True)
class CodegenChoices:
    """Code shapes the lowering may take where they apply, each on by default but
    ``predicated`` (partly).  The jit reads them
    from the environment once per compile (``from_env``; the ``TILES_*`` variables of config.py)
    into ``Options.codegen``, so both compile caches key on them; the lowering reads only these
    fields.  A backend that finds one does not serve a kernel lowers it again with it off."""

    tma: bool = config.TMA_BY_DEFAULT  # TILES_TMA: descriptor tiles copied by TMA (cuda/hopper/tma_claim.py)
    tma_top_loads: bool = True  # no variable: a producer may copy top-level descriptor loads (persistent.py)
    producer: bool = True    # TILES_PRODUCER: a producer warpgroup issues the copies (cuda/hopper/tma_producer.py)
    persistent: bool = True  # TILES_PERSISTENT: at most one program per SM (cuda/hopper/persistent.py)
    inflight: bool = True    # TILES_INFLIGHT: the last product left in flight (cuda/hopper/inflight.py)
    stmatrix: bool = True    # TILES_STMATRIX: MMA tiles staged swizzled (lowering/mma/staging.py, epilogue.py)
    approx_div: bool = True  # TILES_APPROX_DIV: float32 ``/`` as the emitter's approximate_divide
    occupancy: bool = True   # TILES_OCCUPANCY: cuda reloads register-bound kernels capped (cuda/occupancy.py)
    predicated: str = "outside_loops"  # TILES_PREDICATED: masked global accesses predicated (cuda/predicated_ops.py)
    reassociate: bool = True  # TILES_REASSOCIATE: pointer sums in loops add columns first (reassociate_pointers.py)

    @classmethod
    def from_env(cls) -> CodegenChoices:
        """The choices the ``TILES_*`` variables make now (config.py), parsed once per setting."""
        key = config.code_choice_values()
        choices = _CHOICES_BY_SETTING.get(key)
        if choices is None:
            choices = _CHOICES_BY_SETTING[key] = cls(
                tma=config.tma(), producer=config.producer_warp(), persistent=config.persistent(),
                inflight=config.inflight(), stmatrix=config.stmatrix(),
                approx_div=config.approximate_division(), occupancy=config.occupancy(),
                predicated=config.predicated_access(), reassociate=config.reassociate_pointers())
        return choices


_CHOICES_BY_SETTING: dict[tuple[Any, ...], CodegenChoices] = {}  # (a race stores equal values)


@dataclass(frozen=True)
class Options:
    """The compile options of a launch, handed whole to every stage (``Backend.stages``,
    ``lowering.lower``).  ``maxnreg`` only caps registers on cuda; Triton's other launch options
    (``num_ctas``, ...) are accepted and change nothing: ``runtime/launch_options.py`` (``HINTS``)
    lists them, and docs/porting-from-triton.md says why each has no effect.  ``codegen``: the
    code shapes allowed (``CodegenChoices``; the jit fills it from the environment)."""

    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int = DEFAULT_NUM_STAGES   # software-pipelining depth of tensor-core loops (cuda); tl.range's wins
    debug: bool = False
    fp_fusion: bool = False  # Triton's enable_fp_fusion: a * b + c may round once (lowering/contract.py)
    maxnreg: int | None = None  # Triton's maxnreg: the most registers per thread (cuda: PTX .maxnreg)
    codegen: CodegenChoices = CodegenChoices()

    def without(self, *choices: str) -> Options:
        """These options with the named ``codegen`` choices off (a lowering retried without them)."""
        off = {name: "" if isinstance(getattr(self.codegen, name), str) else False for name in choices}
        return dataclasses.replace(self, codegen=dataclasses.replace(self.codegen, **off))  # type: ignore[arg-type]

    def threads(self, target: Target) -> int:
        """Threads per program: ``num_warps`` warps of the target's width (the only place this is computed)."""
        return self.num_warps * target.warp_size


# CompiledKernel's typed launch facts, also readable through its ``metadata`` view; the optional ones
# only where set (a kernel with tensor maps, a persistent one).
LAUNCH_FIELDS = ("threads", "shared", "entry", "arch", "not_applied")
OPTIONAL_LAUNCH_FIELDS = ("tensor_maps", "persistent")
OPTION_FACTS = ("name", "num_warps", "num_stages", "num_ctas", "maxnreg", "debug", "enable_fp_fusion")


class Metadata(dict[str, Any]):
    """A read-only snapshot of a compiled kernel's facts (a dict, so JSON and ``==`` work); its keys
    read as attributes too (``metadata.shared``), as Triton's ``CompiledKernel.metadata`` fields."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"CompiledKernel.metadata has no {name!r}; it has: {', '.join(self)}") from None

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("CompiledKernel.metadata is read-only: set the typed fields (threads, shared, "
                        "entry, arch), CompiledKernel.extra (other JSON-able facts) or .loaded (live objects)")

    __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]


@functools.lru_cache(maxsize=64)
def _takes_stream(launch: Callable[..., Any]) -> bool:
    return "stream" in inspect.signature(launch).parameters


class _Later:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Stages(dict[str, Any]):
    """``CompiledKernel.asm`` where some stages are made at their first read: ``later(name, make)``
    (the interpreter's IR text, which few launches read and which costs about as much to print as
    a small kernel costs to trace).  Every way of reading the dict sees the made value; ``made()``
    gives only the stages made so far (what the disk cache stores: the rest are remade)."""

    def later(self, name: str, make: Callable[[], Any]) -> None:
        dict.__setitem__(self, name, _Later(make))

    def made(self) -> dict[str, Any]:
        return {name: v for name, v in dict.items(self) if type(v) is not _Later}

    def __getitem__(self, name: str) -> Any:
        value = dict.__getitem__(self, name)
        if type(value) is _Later:
            value = value.make()
            dict.__setitem__(self, name, value)
        return value

    def _make_all(self) -> None:
        for name, value in list(dict.items(self)):
            if type(value) is _Later:
                self[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __iter__(self) -> Any:  # (not dict's: dict(stages) and {**stages} then read through __getitem__)
        return iter(list(dict.keys(self)))

    def items(self) -> Any:
        self._make_all()
        return super().items()

    def values(self) -> Any:
        self._make_all()
        return super().values()

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def pop(self, name: str, *default: Any) -> Any:
        if name in self:
            value = self[name]
            del self[name]
            return value
        return super().pop(name, *default)

    def popitem(self) -> tuple[str, Any]:
        self._make_all()
        return super().popitem()

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name in self:
            return self[name]
        self[name] = default
        return default

    def __eq__(self, other: object) -> bool:
        self._make_all()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._make_all()
        return super().__repr__()

    def __reduce__(self) -> Any:
        return dict, (dict(self.items()),)


@dataclass
class CompiledKernel:
    """A kernel ready to launch: its stage outputs, the launch facts the stages fixed, and
    the objects a backend loads for it.

    ``threads``, ``shared`` (bytes of dynamic shared / local memory per program), ``entry`` (the
    function name in the code), ``arch`` and ``not_applied`` (options the generated code does not
    follow, each with its file:line, e.g. a ``tl.range(num_stages=)`` with nothing to pipeline)
    are set by the stages, and where the code takes hidden parameters, ``tensor_maps`` (the JSON
    specs of the ``CUtensorMap``s whose device address is one more parameter after the user's,
    cuda's TMA) and ``persistent`` (programs loop over the grid: launched with at most one per
    multiprocessor, the grid as three more int32 parameters); ``extra`` holds any other JSON-able
    facts a backend reports
    (registers, spills...), ``loaded`` the live objects it keeps (modules, programs; never
    cached).  ``metadata`` is a read-only view of all the facts, as Triton's
    ``CompiledKernel.metadata``; a saved one passed back as ``extra`` fills the typed fields.
    """

    name: str
    ir: Kernel
    options: Options
    asm: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    handle: Any = None
    threads: int = 0
    shared: int = 0
    entry: str = ""
    arch: str = ""
    not_applied: tuple[str, ...] = ()  # options the code does not follow, each with its file:line
    tensor_maps: tuple[dict[str, Any], ...] = ()  # the hidden tensor maps' specs (cuda/tma_launch.py)
    persistent: bool = False  # launched with at most one program per multiprocessor, the grid passed
    loaded: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def metadata(self) -> Metadata:
        """The JSON-able facts (the launch fields, the options under Triton's names, then ``extra``), read-only."""
        facts = {name: getattr(self, name) for name in LAUNCH_FIELDS}
        facts["not_applied"] = list(self.not_applied)
        if self.tensor_maps:
            facts["tensor_maps"] = list(self.tensor_maps)
        if self.persistent:
            facts["persistent"] = True
        return Metadata({**facts, **self._option_facts(), **self.extra})

    def _option_facts(self) -> dict[str, Any]:
        """The options compiled with, under Triton's metadata names (derived, never saved)."""
        options = self.options
        values = (self.name, options.num_warps, options.num_stages, 1, options.maxnreg, options.debug,
                  options.fp_fusion)
        return dict(zip(OPTION_FACTS, values, strict=True))

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """``kernel.warmup(...)[grid](*args)`` launches it as Triton's ``CompiledKernel[grid]``: every
        parameter positionally, constexprs included, with the options it was compiled with."""
        launch = self.loaded.get("launch")
        if launch is None:
            raise TypeError(f"{self.name}: only a kernel from kernel.warmup(...) can be launched as "
                            "compiled[grid](...); launch the @jit function instead: kernel[grid](...)")
        options = self.options
        hints: dict[str, Any] = {"enable_fp_fusion": options.fp_fusion}
        if options.maxnreg is not None:
            hints["maxnreg"] = options.maxnreg

        def run(*args: Any, **kwargs: Any) -> None:
            launch(*args, grid=grid, num_warps=options.num_warps, num_stages=options.num_stages,
                   debug=options.debug, **hints, **kwargs)
        return run

    def _init_handles(self) -> None:
        """Triton's explicit load before reading ``n_regs``: tiles loads on first launch, so a no-op."""

    @property
    def n_regs(self) -> int:
        """Registers per thread (Triton's name), for occupancy formulas: ptxas's count on cuda,
        the interpreter's model (``backends/interpreter.py``); other backends raise, saying why."""
        return int(self._resource("registers"))

    @property
    def n_spills(self) -> int:
        """Bytes spilled per thread (Triton's name); where ``n_regs`` is known, else it raises."""
        return int(self._resource("spill_stores"))

    @property
    def n_max_threads(self) -> int:
        """The most threads a program may have (Triton's name): this launch's ``threads`` or more."""
        return max(self.threads, int(self.extra.get("max_threads", self.threads)))

    def _resource(self, key: str) -> int:
        report = self.loaded.get("resources")  # a backend that measures them on demand (cuda: ptxas)
        if "registers" not in self.extra and report is not None:
            self.extra.update(report())
        if "registers" not in self.extra:
            raise AttributeError(
                f"{self.ir.loc}: {self.name}: this backend does not report register use (n_regs, n_spills); "
                "ptxas on PATH gives it for cuda, the interpreter models it. Write the occupancy arithmetic "
                "so it does not need it, or run it on cuda or the interpreter")
        return int(self.extra.get(key, 0))

    def __post_init__(self) -> None:
        # A saved ``metadata`` dict given as ``extra`` (disk-cache entries): launch facts go to their fields.
        for name in (*LAUNCH_FIELDS, *OPTIONAL_LAUNCH_FIELDS):
            if name in self.extra:
                setattr(self, name, self.extra.pop(name))
        for name in OPTION_FACTS:
            self.extra.pop(name, None)
        self.not_applied = tuple(self.not_applied)
        self.tensor_maps = tuple(self.tensor_maps)
        self.persistent = bool(self.persistent)

    @classmethod
    def restore(cls, kernel: Kernel, options: Options, asm: dict[str, Any], metadata: Mapping[str, Any],
                handle: Any = None) -> CompiledKernel:
        """A kernel rebuilt from stored stages and the ``metadata`` saved with them (disk cache)."""
        return cls(kernel.name, kernel, options, dict(asm), dict(metadata), handle)


class PlannedArg(NamedTuple):
    """One run-time parameter of a launch plan (the jit makes one per kernel parameter that is
    not a constexpr; ``make_launcher`` takes them): where its value is among the launch's values
    (``position``; negative for a hidden parameter appended after them), its ``name``, whether it is
    a pointer and whether the kernel may write through it."""

    position: int
    name: str
    is_pointer: bool
    writable: bool

    def arg(self, values: Sequence[Any]) -> LaunchArg:
        """This parameter's ``LaunchArg`` in a launch of ``values``."""
        return LaunchArg(self.name, values[self.position], self.is_pointer, self.writable)


LaunchPlan = Sequence[PlannedArg]


@dataclass
class LaunchArg:
    """One kernel argument as the user passed it: an array-like or a scalar."""

    name: str
    value: Any
    is_pointer: bool
    writable: bool = True  # False when the kernel provably never writes through it


_ASM = object()  # Staged.next when the next stage takes the stage's asm


@dataclass(frozen=True)
class Staged:
    """What a stage returns when it fixes more than its text.  ``asm`` is kept in
    ``compiled.asm[stage]`` (``TILES_DUMP`` prints it) and handed to the next stage unless ``next``
    says otherwise (ROCm's object code); each launch fact given (None: not this stage's) is set on
    the ``CompiledKernel``, ``extra``/``loaded``/``more_asm`` entries are added to its dicts.
    ``Backend.compile`` does all of that (``record``): stages read ``compiled`` and never write it."""

    asm: Any
    next: Any = _ASM
    threads: int | None = None
    shared: int | None = None
    entry: str | None = None
    arch: str | None = None
    not_applied: tuple[str, ...] | None = None
    tensor_maps: tuple[dict[str, Any], ...] | None = None
    persistent: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    loaded: Mapping[str, Any] = field(default_factory=dict)
    more_asm: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def lowered(cls, lowered: Any, **facts: Any) -> Staged:
        """A code stage's result from the lowering's ``Lowered`` (``lowering/entry.py``): its code
        and the launch facts it fixed (threads, shared bytes, entry, options not applied)."""
        return cls(lowered.code, threads=lowered.threads, shared=lowered.shared_bytes, entry=lowered.entry,
                   not_applied=tuple(lowered.not_applied), **facts)

    def record(self, stage: str, compiled: CompiledKernel) -> Any:
        """Put this result on ``compiled`` (``asm[stage]``, the facts, the dicts' entries); what
        the next stage takes."""
        compiled.asm[stage] = self.asm
        compiled.asm.update(self.more_asm)
        for name in (*LAUNCH_FIELDS, *OPTIONAL_LAUNCH_FIELDS):
            value = getattr(self, name)
            if value is not None:
                setattr(compiled, name, value)
        compiled.extra.update(self.extra)
        compiled.loaded.update(self.loaded)
        return self.asm if self.next is _ASM else self.next


# A compile stage: ``stage(previous output, compiled) -> output`` (a plain value, kept in
# ``compiled.asm`` and passed on, or a ``Staged``); ``compiled`` is read (its ``ir``, ``name``), not written.
Stage = Callable[[Any, CompiledKernel], Any]


class Backend(abc.ABC):
    name: str = ""
    fp_fusion_default = False  # Options.fp_fusion when the launch does not say (Triton's: True)
    # True when the code compiled does not depend on the parameters' divisibility facts (the IR
    # keeps them as notes): the jit then traces once for launches that differ only in alignment
    # and hands each its own copy of the IR through ``respecialized``.
    divisibility_free = False

    def respecialized(self, compiled: CompiledKernel, kernel: Kernel) -> CompiledKernel:
        """``compiled`` for ``kernel``: the same code whose parameters carry other divisibility
        facts (only called where ``divisibility_free``)."""
        raise NotImplementedError

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when kernels can run here; otherwise (False, why)."""

    @abc.abstractmethod
    def target(self) -> Target:
        """The capabilities of the device kernels will run on."""

    @abc.abstractmethod
    def stages(self, options: Options) -> dict[str, Stage]:
        """Ordered compile stages: each takes the previous stage's output."""

    @abc.abstractmethod
    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg]) -> None:
        """Run the compiled kernel over ``grid`` programs.  Backends with streams also take a
        ``stream=`` keyword (the launch's ``stream=``, passed only when the caller gave one)."""

    def code_choices(self) -> CodegenChoices:
        """The code choices compiles take now (``Options.codegen``): the environment's, read by the
        jit once per compile."""
        return CodegenChoices.from_env()

    def target_key(self) -> Any:
        """What compiled code is specific to here: (arch, current device).  The jit keys its
        in-memory caches on it and calls it on every launch, so backends whose ``target()`` is
        costly override it with something cheap."""
        return (self.target().arch, self.current_device())

    def current_device(self) -> int:
        """The index of the device launches go to now (``tiles.runtime.driver``)."""
        return 0

    def set_current_device(self, device: int) -> None:
        """Make ``device`` the one later launches go to; backends with one device accept only 0."""
        if int(device) != 0:
            raise ValueError(f"the {self.name} backend has one device (0), not {device}")

    def current_stream(self, device: int | None = None) -> Any:
        """The stream launches go to when the caller names none (0/None: the default stream)."""
        return None

    def device_properties(self, device: int = 0) -> dict[str, Any]:
        """Triton's ``utils.get_device_properties`` keys for ``device`` (see tiles.runtime.driver)."""
        target = self.target()
        return {"multiprocessor_count": 1, "max_shared_mem": target.shared_memory,
                "max_num_regs": 65536, "warpSize": target.warp_size,
                "max_threads_per_block": target.max_threads_per_block,
                "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}

    def is_gpu(self) -> bool:
        """Whether kernels run on a GPU (only GPU backends are picked by default)."""
        return True

    def make_launcher(self, compiled: CompiledKernel, plan: LaunchPlan) -> Callable[..., None]:
        """A function ``(grid, values, stream=None)`` that launches ``compiled``; ``plan``: a
        ``PlannedArg`` per run-time parameter (index into values, name, is pointer, may be written).  The jit
        passes ``stream=`` only when the launch named one.  Backends override this to make
        repeated launches cheap; this default hands ``stream`` to ``launch`` when that takes one
        and otherwise ignores it (backends without streams run in order anyway)."""
        launch = self.launch
        method = getattr(launch, "__func__", None)  # (a method: its function's answer, found once)
        takes_stream = _takes_stream(method) if method is not None else "stream" in inspect.signature(launch).parameters

        def launcher(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
            args = [p.arg(values) for p in plan]
            if stream is not None and takes_stream:
                self.launch(compiled, grid, args, stream=stream)  # type: ignore[call-arg]
            else:
                self.launch(compiled, grid, args)
        return launcher

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Kernel,
                    options: Options) -> CompiledKernel | None:
        """Rebuild a kernel from the ``str``/``bytes`` stages of an on-disk cache entry.

        The default (None) means "not cacheable": nothing is written to the disk cache.
        """
        return None

    def toolchain_version(self) -> str:
        """Versions of the compilers this backend calls; part of the disk-cache key."""
        return ""

    def unsupported(self, kernel: Kernel) -> list[str]:
        """Human-readable reasons this backend cannot run ``kernel`` (empty when it can)."""
        target = self.target()
        reasons = []
        for instr in kernel.walk():
            if instr.op in target.unsupported_ops:
                reasons.append(f"{instr.loc}: op {instr.op.value} is not supported on {self.name}")
            for v in instr.results:
                dt = v.type.element
                if dt not in target.dtypes:
                    reasons.append(f"{instr.loc}: dtype {dt} is not supported on {self.name}")
        return reasons

    def compile(self, kernel: Kernel, options: Options) -> CompiledKernel:
        from ..core.errors import UnsupportedError
        reasons = self.unsupported(kernel)
        if reasons:
            raise UnsupportedError("; ".join(dict.fromkeys(reasons)), kernel.loc)
        compiled = CompiledKernel(kernel.name, kernel, options)
        value: Any = kernel
        limit = self.target().shared_memory
        for stage_name, stage in self.stages(options).items():
            value = stage(value, compiled)
            if isinstance(value, Staged):
                value = value.record(stage_name, compiled)
            else:
                compiled.asm[stage_name] = value
            needed = compiled.shared
            if needed > limit:
                from ..core.errors import OutOfResourcesError
                raise OutOfResourcesError(
                    f"kernel {kernel.name} needs {needed} bytes of shared memory per program with num_warps="
                    f"{options.num_warps}, num_stages={options.num_stages}; {self.name} allows {limit}. Use smaller "
                    "block sizes or fewer num_stages (each stage holds a copy of the tl.dot operands)", kernel.loc)
        compiled.handle = value
        return compiled
