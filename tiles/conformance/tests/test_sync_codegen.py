"""Ordering defects a CPU device cannot show, caught in the code the backends emit for the ``sync``
family's kernels.

pocl runs a work-group's work-items one after another between barriers, on memory that is
coherent, so a dropped acquire, release, fence or volatile gives the right values there; on a
GPU they give wrong values or hangs.  Each check below reads the emitted code (OpenCL C, LLVM IR
of the cuda backend, the tile IR) of a lock, a spin-wait or a look-back kernel, passes on the
unpatched backends, and rejects the code each planted defect of ``planted_sync.CODE_DEFECTS``
makes.  The rules are Triton's: ``tl.atomic_*`` default to ``sem="acq_rel"``; a volatile load
re-reads memory every time (Triton gives it a write effect, so no pass removes or merges it);
``tl.debug_barrier()`` is a CTA barrier that orders the program's memory accesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tiles.backends.base import Options
from tiles.conformance import backends as B
from tiles.conformance.corpus import sync
from tiles.conformance.profiles import CI
from tiles.conformance.runner import traced
from tiles.core.ops import Op

from . import planted_sync as S
from .planted import patched


def _case(name: str):
    return next(c for c in sync.cases(CI) if c.name.startswith(name))


def _ir(name: str):
    c = _case(name)
    return traced(c.kernel, c.args(), c.constexprs)


def _warps(name: str) -> int:
    return _case(name).constexprs.get("num_warps", 4)


def _opencl_source(name: str, backend=None) -> str:
    try:
        backend = backend or B.resolve("opencl")
    except B.NotAvailable as e:
        pytest.skip(f"needs the opencl backend to compile: {e}")
    return backend.compile(_ir(name), Options(num_warps=_warps(name))).asm["opencl"]


def _cuda_llir(name: str) -> str:
    from tiles.backends.cuda import CUDABackend

    class PTXOnly(CUDABackend):  # compiles without a GPU, as tests/cuda_ptx_backend.py
        name = "cuda-ptx-only"

        def available(self) -> tuple[bool, str]:
            return True, ""

        def arch(self) -> str:
            return "sm_90a"

    return PTXOnly().compile(_ir(name), Options(num_warps=_warps(name))).asm["ptx"]


def _count_volatile_loads(kernel) -> int:
    return sum(1 for i in kernel.walk() if i.op is Op.LOAD and i.attrs.volatile)


# ---------------------------------------------------------------- the checks (None: the code is right)

def volatile_reads(name: str, source: str) -> str | None:
    """Every volatile load of the kernel reads through a volatile pointer in the OpenCL C."""
    wanted = _count_volatile_loads(_ir(name))
    found = len(re.findall(r"\(\*\(*\(volatile __global [a-z]+\*\)", source))
    if found < wanted:
        return f"{wanted} volatile loads in the IR, {found} volatile reads in the OpenCL C"
    return None


def spin_wait_kept(kernel) -> str | None:
    """The IR still has a while loop whose condition re-reads the flag with a volatile load."""
    for instr in kernel.walk():
        if instr.op is Op.WHILE and any(i.op is Op.LOAD and i.attrs.volatile for i in instr.regions[0].instrs):
            return None
    return "the spin-wait `while tl.load(flag, volatile=True) == 0: pass` is gone from the IR"


def _atoms(ptx: str) -> list[tuple[str, bool, bool]]:
    """Each ``atom`` instruction of the PTX: (its opcode, a fence right before, a fence right after)."""
    lines = [ln.strip() for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    return [(ln.split()[0], lines[i - 1].startswith("fence."), lines[i + 1].startswith("fence."))
            for i, ln in enumerate(lines) if ln.startswith("atom.")]


def cas_acquires(ptx: str) -> str | None:
    """Every compare-and-swap (the lock's acquire) orders what follows it: acquire or stronger."""
    cas = [(op, after) for op, _, after in _atoms(ptx) if ".cas." in op]
    weak = [op for op, after in cas if not (after or ".acquire." in op or ".acq_rel." in op)]
    if not cas or weak:
        return f"compare-and-swaps {[op for op, _ in cas]}: a lock taken with them does not acquire"
    return None


def rmw_releases(ptx: str) -> str | None:
    """Every read-modify-write (the lock's release by atomic_xchg) publishes what precedes it."""
    rmw = [(op, before) for op, before, _ in _atoms(ptx) if ".cas." not in op]
    weak = [op for op, before in rmw if not (before or ".release." in op or ".acq_rel." in op)]
    if not rmw or weak:
        return f"read-modify-writes {[op for op, _ in rmw]}: a lock released with them does not release"
    return None


def barrier_orders_global_memory(source: str) -> str | None:
    """``tl.debug_barrier()`` before a lock's release orders the critical section's global stores."""
    barriers = re.findall(r"barrier\(([^)]*)\)", source)
    if not any("CLK_GLOBAL_MEM_FENCE" in b for b in barriers):
        return f"barriers {sorted(set(barriers))}: none orders global memory"
    return None


# ---------------------------------------------------------------- unpatched code passes

@pytest.mark.slow
def test_opencl_volatile_loads_read_memory():
    for name in ("spin_wait_flag[volatile", "lookback_scan"):
        assert volatile_reads(name, _opencl_source(name)) is None


def test_spin_wait_survives_the_ir_passes():
    assert spin_wait_kept(_ir("spin_wait_flag[volatile")) is None


def test_cuda_lock_acquires_and_releases():
    llir = _cuda_llir("spin_lock_accumulate")
    assert cas_acquires(llir) is None, cas_acquires(llir)
    assert rmw_releases(llir) is None, rmw_releases(llir)


@pytest.mark.slow
def test_opencl_barrier_orders_global_memory():
    source = _opencl_source("spin_lock_accumulate")
    assert barrier_orders_global_memory(source) is None, barrier_orders_global_memory(source)


# ---------------------------------------------------------------- each planted defect is rejected

def _planted_cuda(defect: type[S.Planted]) -> Callable[[str], str]:
    def llir(name: str) -> str:
        with patched(defect.target_name, defect.replace):
            return _cuda_llir(name)
    return llir


def test_every_code_defect_has_a_check():
    assert set(CODEGEN) == set(S.CODE_DEFECTS)


@pytest.mark.slow
def test_volatile_dropped_is_caught():
    try:
        backend = S.VolatileLoadDropped()
        B.resolve("opencl")
    except B.NotAvailable as e:
        pytest.skip(f"needs the opencl backend to compile: {e}")
    why = volatile_reads("spin_wait_flag[volatile", _opencl_source("spin_wait_flag[volatile", backend))
    assert why is not None and "0 volatile reads" in why


def test_dce_dropping_the_spin_wait_is_caught():
    defect = S.DeadCodeDropsVolatileSpin
    with patched(defect.target_name, defect.replace):
        kernel = _ir("spin_wait_flag[volatile")
    assert spin_wait_kept(kernel) is not None


def test_cuda_acquire_dropped_is_caught():
    assert cas_acquires(_planted_cuda(S.CudaAcquireDropped)("spin_lock_accumulate")) is not None


def test_cuda_release_dropped_is_caught():
    assert rmw_releases(_planted_cuda(S.CudaReleaseDropped)("spin_lock_accumulate")) is not None


CODEGEN = {
    S.VolatileLoadDropped: test_volatile_dropped_is_caught,
    S.DeadCodeDropsVolatileSpin: test_dce_dropping_the_spin_wait_is_caught,
    S.CudaAcquireDropped: test_cuda_acquire_dropped_is_caught,
    S.CudaReleaseDropped: test_cuda_release_dropped_is_caught,
}
