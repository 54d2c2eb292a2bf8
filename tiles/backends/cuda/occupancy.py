"""One more program per SM where registers alone keep it out.

ptxas sizes a kernel's registers for one program per SM when nothing else says otherwise, so a
256-thread kernel may take 198 registers although its shared memory would let two or three programs
share an SM (the tutorial's causal attention at d=64 does: the addresses of the second loop stay
live through the first).  After the driver loads a kernel, ``load`` reads its registers and local
memory; when registers are what limits programs per SM, and a handful of warps is all the SM then
holds, it loads the PTX again with ``.minnctapersm`` asking for one program more (ptxas then caps
the registers: a second JIT compile, once per context, cached by the driver like the first) and
keeps that version if it spills at most ``SPILL_ALLOWANCE`` more bytes per thread
(values that live across a loop spill outside it) and the cap leaves room for twice its largest
warpgroup-MMA accumulator (a 128x256 fp8 tile on 8 warps capped to 128 registers ran at a fifth of
its speed with fewer spilled bytes than that).
The opposite case is handled the same way: where ptxas sized a kernel for many programs per SM
and spilled heavily to get there (``HEAVY_SPILL`` bytes per thread or more with registers left
unused: Liger's group norm, a 32768-wide tile on 4 warps, got 32 registers and 2.2 KB of stack a
thread), it loads the PTX again with ``.minnctapersm 1`` and keeps that version if it spills at most
a quarter as much.
``Options.codegen.occupancy`` off (``TILES_OCCUPANCY=0``) switches both off; a kernel launched with
``maxnreg=`` (PTX ``.maxnreg``) is left as its author capped it.  ``second_compile`` is that decision;
``settled`` takes it with ptxas instead of the driver, at compile time, where ``choices.py`` compares
two lowerings of one kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import driver as cu
from .driver import Driver

SPILL_ALLOWANCE = 128  # bytes per thread
HEAVY_SPILL = 512  # bytes per thread spilled with registers to spare: worth one program per SM
MAX_REGISTERS = 255  # per thread
FEW_WARPS = 8  # per SM: at or below this, one more program is worth a few spilled registers
REGISTER_UNIT = 256  # registers are given to warps in units of this many


@dataclass(frozen=True)
class SMLimits:
    """What one streaming multiprocessor holds (an H100/H200's by default)."""

    registers: int = 65536
    threads: int = 2048
    programs: int = 32
    shared: int = 228 * 1024
    shared_reserved_per_program: int = 1024


def _warps(threads: int) -> int:
    return -(-threads // 32)


def programs_per_sm(registers: int, threads: int, shared: int, limits: SMLimits) -> tuple[int, int]:
    """(programs per SM as registers allow, as everything else allows)."""
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = (limits.registers // per_warp) // _warps(threads) if per_warp else limits.programs
    by_shared = limits.shared // (shared + limits.shared_reserved_per_program)
    return by_registers, min(by_shared, limits.threads // threads, limits.programs)


def wanted_programs(registers: int, threads: int, shared: int, limits: SMLimits) -> int | None:
    """The programs per SM to ask ptxas for, or None where registers are not the limit that matters."""
    by_registers, by_rest = programs_per_sm(registers, threads, shared, limits)
    if by_registers >= by_rest or by_registers * _warps(threads) > FEW_WARPS:
        return None
    return by_registers + 1


def largest_accumulator(ptx: str) -> int:
    """Registers in the largest warpgroup-MMA accumulator of ``ptx`` (0 without wgmma)."""
    lists = re.findall(r"wgmma\.mma_async[^{]*\{([^}]*)\}", ptx)
    return max((len(regs.split(",")) for regs in lists), default=0)


def room_for(threads: int, programs: int, limits: SMLimits) -> int:
    """The most registers per thread that let ``programs`` programs of ``threads`` share an SM."""
    per_warp = limits.registers // (programs * _warps(threads)) // REGISTER_UNIT * REGISTER_UNIT
    return per_warp // 32


def with_directive(ptx: str, directive: str) -> str | None:
    """``ptx`` with a performance directive (``.minnctapersm 2``, ``.maxnreg 128``) on its kernel,
    after its thread count; None if it has no ``.maxntid``/``.reqntid``."""
    out, count = re.subn(r"^(\.(?:maxntid|reqntid)[^\n]*)$", lambda m: f"{m.group(1)}\n{directive}", ptx,
                         count=1, flags=re.MULTILINE)
    return out if count else None


def with_min_programs(ptx: str, programs: int) -> str | None:
    return with_directive(ptx, f".minnctapersm {programs}")


def device_limits(drv: Driver, device: int) -> SMLimits:
    """The SM's limits as the driver reports them (an H100/H200's where it cannot say)."""
    try:
        return SMLimits(
            registers=drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device),
            threads=drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device),
            programs=drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, device),
            shared=drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, device),
            shared_reserved_per_program=drv.device_attribute(
                cu.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, device))
    except (cu.CUDAError, TypeError, ValueError):
        return SMLimits()


@dataclass(frozen=True)
class Loaded:
    """A loaded kernel: its module and function, and the programs per SM asked of ptxas (0: none)."""

    module: int
    function: int
    asked: int = 0


def load(drv: Driver, image: bytes, name: str, threads: int, shared: int, again: bool = True) -> Loaded:
    """Load ``image`` in the current context; again with ``.minnctapersm`` where that pays and
    ``again`` allows it (``Options.codegen.occupancy``; module doc; ``threads`` 0: unknown, loaded
    once).  Any failure of the second try (ptxas refusing the cap, a
    driver without an attribute) keeps the first."""
    module = drv.load_module(image)
    first = Loaded(module, drv.get_function(module, name))
    if not again or threads <= 0:
        return first
    text = image.decode()
    if capped_by_author(text):
        return first
    try:
        return _with_one_more_program(drv, first, text, name, threads, shared)
    except cu.CUDAError:
        return first


def capped_by_author(ptx: str) -> bool:
    """Whether ``ptx`` carries a launch's ``maxnreg=`` (PTX ``.maxnreg``), which decides alone."""
    return re.search(r"^\.maxnreg\b", ptx, flags=re.MULTILINE) is not None


def one_more_program(text: str, registers: int, local: int, threads: int, shared: int, limits: SMLimits,
                     capped: Callable[[str], tuple[int, int]]) -> tuple[int, int] | None:
    """(programs per SM, local bytes per thread) of ``text`` capped for one more program where that
    pays (module doc), or None to keep it as it is; ``registers``/``local``: its registers and local
    bytes per thread, ``capped(ptx)`` those of the capped version (from the driver at load time,
    from ptxas when choosing between lowerings)."""
    if "setmaxnreg" in text:  # its warpgroups divide the registers it was launched with (tma_producer.py)
        return None
    wanted = wanted_programs(registers, threads, shared, limits)
    # a hot loop's accumulators alone near the cap (a 128x256 tile on 8 warps holds 128) spill inside it
    if wanted is None or room_for(threads, wanted, limits) < 2 * largest_accumulator(text):
        return None
    ptx = with_min_programs(text, wanted)
    if ptx is None:
        return None
    capped_registers, capped_local = capped(ptx)
    fits = programs_per_sm(capped_registers, threads, shared, limits)[0] >= wanted
    return (wanted, capped_local) if fits and capped_local - local <= SPILL_ALLOWANCE else None


def fewer_spills(text: str, registers: int, local: int,
                 capped: Callable[[str], tuple[int, int]]) -> tuple[int, int] | None:
    """(1, local bytes per thread) of ``text`` asked for one program per SM where ptxas spilled
    ``HEAVY_SPILL`` bytes or more with registers to spare and that removes most of it (module doc),
    or None to keep it as it is; ``capped`` as for ``one_more_program``."""
    if local < HEAVY_SPILL or registers >= MAX_REGISTERS or "setmaxnreg" in text:
        return None
    ptx = with_min_programs(text, 1)
    if ptx is None:
        return None
    _, uncapped_local = capped(ptx)
    return (1, uncapped_local) if 4 * uncapped_local <= local else None


def second_compile(text: str, registers: int, local: int, threads: int, shared: int, limits: SMLimits,
                   capped: Callable[[str], tuple[int, int]]) -> tuple[int, int] | None:
    """(programs per SM asked of ptxas, local bytes per thread) of the version of ``text`` to keep
    instead of it (fewer spills first, else one more program), or None to keep ``text``."""
    return (fewer_spills(text, registers, local, capped)
            or one_more_program(text, registers, local, threads, shared, limits, capped))


def _with_one_more_program(drv: Driver, first: Loaded, text: str, name: str, threads: int,
                           shared: int) -> Loaded:
    registers = drv.function_attribute(first.function, cu.CU_FUNC_ATTRIBUTE_NUM_REGS)
    if registers is None:
        return first
    local = drv.function_attribute(first.function, cu.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) or 0
    static = drv.function_attribute(first.function, cu.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) or 0
    held: list[Loaded] = []

    def load_capped(ptx: str) -> tuple[int, int]:
        module = drv.load_module(ptx.encode())
        held.append(Loaded(module, drv.get_function(module, name)))
        return (drv.function_attribute(held[-1].function, cu.CU_FUNC_ATTRIBUTE_NUM_REGS) or registers,
                drv.function_attribute(held[-1].function, cu.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) or 0)
    try:
        kept = second_compile(text, registers, local, threads, shared + static,
                              device_limits(drv, drv.context_device()), load_capped)
    except cu.CUDAError:
        kept = None
        if not held:
            raise
    # a decision that keeps a version keeps the last one it loaded
    chosen = held.pop() if kept is not None else first
    for other in (*held, first):
        if other is not chosen:
            drv.unload_module(other.module)
    return first if kept is None else Loaded(chosen.module, chosen.function, kept[0])


def settled(ptx: str, arch: str, threads: int, shared: int, cap: bool = True,
            limits: SMLimits = SMLimits()) -> tuple[int, int] | None:
    """(programs per SM, local bytes per thread) of ``ptx`` as ``load`` would leave it on an SM with
    ``limits`` (``cap`` False: as ptxas sizes it, before any cap, as ``load`` with ``again`` off), from
    ptxas (None without ptxas): what two lowerings of one kernel are compared by."""
    from . import toolchain
    info = toolchain.ptxas_info(ptx, arch)
    if "registers" not in info:
        return None
    registers, local = info["registers"], info.get("stack_frame", 0)
    shared += info.get("shared_memory", 0)
    if cap and not capped_by_author(ptx):
        def capped(text: str) -> tuple[int, int]:
            more = toolchain.ptxas_info(text, arch)
            return more.get("registers", registers), more.get("stack_frame", 0)
        kept = second_compile(ptx, registers, local, threads, shared, limits, capped)
        if kept is not None:
            return kept
    return min(programs_per_sm(registers, threads, shared, limits)), local
