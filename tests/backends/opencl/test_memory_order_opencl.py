"""OpenCL C atomics are relaxed (OpenCL 1.2's ``atomic_*``): a ``sem`` other than relaxed puts a
global-memory fence before (release) and after (acquire) the atomic, and ``tl.debug_barrier()``
fences global memory too, so a lock's release publishes the stores made under it.  A loop that
holds barriers ends with one (pocl ran a scalar atomic after such a loop once per work-item)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


def _fence():
    """The device-scope fence this device gets (mem_fence on pocl, a PTX fence on NVIDIA)."""
    from tiles.backends.opencl import runtime
    return runtime.global_fence()


@tiles.jit
def locked_increment(lock_ptr, out_ptr, SEM: tl.constexpr):
    while tl.atomic_cas(lock_ptr, 0, 1, sem=SEM) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0, sem=SEM)


def _run(sem, programs=97):
    lock, out = np.zeros(1, np.int32), np.full(1, 5, np.int32)
    tiles.set_backend("opencl")
    try:
        source = locked_increment.warmup(lock, out, SEM=sem, grid=(programs,)).asm["opencl"]
        locked_increment[(programs,)](lock, out, SEM=sem)
    finally:
        tiles.set_backend(None)
    return source, lock, out


@pytest.mark.parametrize("sem", ["acq_rel", "acquire", "release", "relaxed"])
def test_fences_follow_sem(sem):
    source, lock, out = _run(sem)
    body = source[source.index("__kernel"):]
    cas_at = body.index("atomic_cmpxchg")
    xchg_at = body.index("atomic_xchg")
    after_cas = body[cas_at:cas_at + 120]
    before_xchg = body[xchg_at - 120:xchg_at]
    fence = _fence()
    assert (fence in after_cas) == (sem in ("acquire", "acq_rel"))
    assert (fence in before_xchg) == (sem in ("release", "acq_rel"))
    assert "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" in body  # tl.debug_barrier()
    if sem == "acq_rel":  # Triton's default: the lock works
        assert out[0] == 5 + 97 and lock[0] == 0


@tiles.jit
def release_store(flag_ptr, out_ptr, SEM: tl.constexpr):
    tl.store(out_ptr, 7)
    tl.atomic_xchg(flag_ptr, 1, sem=SEM)


def test_device_without_a_known_fence_refuses_ordered_atomics(monkeypatch):
    from tiles.backends.opencl import runtime
    monkeypatch.setattr(runtime, "global_fence", lambda: "")
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    tiles.set_backend("opencl")
    try:
        with pytest.raises(tiles.UnsupportedError, match="device-scope memory fence"):
            release_store[(1,)](flag, out, SEM="release")
        release_store[(1,)](flag, out, SEM="relaxed")  # nothing to order: runs
    finally:
        tiles.set_backend(None)
    assert flag[0] == 1 and out[0] == 7


@pytest.mark.parametrize("sem", ["acq_rel", "acquire", "release", "relaxed"])
def test_16_bit_lock_fences_follow_sem(sem):
    """A 16-bit lock (atomic_cas and xchg as loops on the 32-bit word): the fence comes before the
    loop for release, after it for acquire; the lock works and its word's other half is kept."""
    lock, out = np.array([0, -12345], np.int16), np.full(1, 5, np.int32)
    tiles.set_backend("opencl")
    try:
        source = locked_increment.warmup(lock, out, SEM=sem, grid=(97,)).asm["opencl"]
        locked_increment[(97,)](lock, out, SEM=sem)
    finally:
        tiles.set_backend(None)
    lines = [line.strip() for line in source[source.index("__kernel"):].splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith("volatile __global uint* q =")]
    ends = [i for i, line in enumerate(lines) if line == "} while (cur != seen);"]
    assert len(starts) == len(ends) == 3  # the cas before the spin loop, the one in it, the xchg
    for start, end in zip(starts, ends, strict=True):
        assert (lines[start - 1] == _fence()) == (sem in ("release", "acq_rel"))
        assert (lines[end + 1] == _fence()) == (sem in ("acquire", "acq_rel"))
    assert lock[1] == -12345
    if sem == "acq_rel":
        assert out[0] == 5 + 97 and lock[0] == 0
