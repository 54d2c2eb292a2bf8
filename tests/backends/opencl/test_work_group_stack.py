"""pocl runs a work-group on one worker thread's stack: a kernel whose work-group does not fit
must run (tiles gives pocl's threads a larger stack) or be refused, never end the process."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.core.errors import OutOfResourcesError

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def _pocl_cpu() -> bool:
    from tiles.backends.opencl import runtime
    return runtime.is_pocl_cpu()


def _child(*flags: str, seed: int, stack_mb: str = "") -> subprocess.CompletedProcess[str]:
    """stack_kernels.py in a process whose threads get glibc's usual 8 MiB stack by default."""
    def limit_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TILES_OPENCL_STACK_MB", None)
    if stack_mb:
        env["TILES_OPENCL_STACK_MB"] = stack_mb
    return subprocess.run([sys.executable, str(HERE / "stack_kernels.py"), str(seed), *flags], env=env,
                          capture_output=True, text=True, timeout=600, preexec_fn=limit_stack)


def test_the_128x256x64_descriptor_gemm_with_8_warps_runs(rng):
    """Its work-group's frame is 8.5 MiB on pocl 3.1: it ended the process with SIGSEGV."""
    if not _pocl_cpu():
        pytest.skip("the stack is pocl's CPU device's")
    done = _child(seed=int(rng.integers(2**31)))
    assert done.returncode == 0, f"the process died ({done.returncode}): {done.stderr[-2000:]}"
    assert done.stdout.startswith("ok "), done.stdout + done.stderr[-2000:]


def test_threads_started_before_tiles_sized_them_refuse_the_kernel(rng):
    """pyopencl listed the platforms first: pocl's threads have 8 MiB, and the kernel is refused
    with the kernel's file:line, before pocl compiles it, instead of overflowing the stack."""
    if not _pocl_cpu():
        pytest.skip("the stack is pocl's CPU device's")
    done = _child("--list-platforms-first", seed=int(rng.integers(2**31)))
    assert done.returncode == 0, f"the process died ({done.returncode}): {done.stderr[-2000:]}"
    assert done.stdout.startswith("refused "), done.stdout + done.stderr[-2000:]
    assert "stack_kernels.py:" in done.stdout and "in persistent_bgemm" in done.stdout
    assert "more than the 8 MiB" in done.stdout and "TILES_OPENCL_STACK_MB" in done.stdout


def test_tiles_opencl_stack_mb_sets_the_stack_the_check_counts_on(rng):
    """With 4 MiB asked for, pocl's threads get 4 MiB and the GEMM is refused against that."""
    if not _pocl_cpu():
        pytest.skip("the stack is pocl's CPU device's")
    done = _child(seed=int(rng.integers(2**31)), stack_mb="4")
    assert done.returncode == 0, f"the process died ({done.returncode}): {done.stderr[-2000:]}"
    assert done.stdout.startswith("refused "), done.stdout + done.stderr[-2000:]
    assert "more than the 4 MiB its threads have;" in done.stdout


@tiles.jit
def _scaled_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 3 - tl.sum(x, 0), mask=offs < n)


def test_a_work_group_over_the_stack_is_refused_before_it_runs(rng, monkeypatch):
    if not _pocl_cpu():
        pytest.skip("the stack is pocl's CPU device's")
    from tiles.backends.opencl import stack
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, 7.0, np.float32)
    monkeypatch.setattr(stack, "available_bytes", lambda: 64 << 10)
    with pytest.raises(OutOfResourcesError, match=r"test_work_group_stack\.py:\d+ in _scaled_rows: .* "
                                                  r"more than the 0 MiB its threads have"):
        _scaled_rows[(1,)](x, y, n, BLOCK=1024, backend="opencl")
    np.testing.assert_array_equal(y, 7.0)  # nothing ran
    monkeypatch.undo()
    _scaled_rows[(1,)](x, y, n, BLOCK=1024, backend="opencl")
    np.testing.assert_allclose(y, x * 3 - x.sum(), rtol=1e-5, atol=1e-4)


def test_private_bytes_counts_every_private_variable_once_per_declaration():
    from tiles.backends.opencl.stack import private_bytes
    source = """inline float helper(float x) { float ignored = x; return ignored; }
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void tiles_k(__global float* a0_x, int a1_n) {
  __local uchar tiles_local[4096] __attribute__((aligned(16)));
  const int tid = (int)get_local_id(0);
  bool v1 = (tid < a1_n);
  long v2;
  float4 v3 = *((__global const float4*)(a0_x));
  __global float* v4 = a0_x + tid;
  __local float* v5 = (__local float*)tiles_local;
  ushort v6[3];
  for (int i7 = 0; i7 < a1_n; i7 += 1) {
    v2 = (long)i7;
  }
}
"""
    # tid 4, v1 1, v2 8, v3 16, v4 8, v5 8, v6 6, i7 4: the local buffer and the helper excluded
    assert private_bytes(source) == 4 + 1 + 8 + 16 + 8 + 8 + 6 + 4
