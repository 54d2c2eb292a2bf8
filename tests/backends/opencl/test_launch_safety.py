"""OpenCL launches: strided NumPy views, concurrent launches of one kernel, Ctrl-C while waiting."""

from __future__ import annotations

import signal
import sys
import threading
import time

import launch_kernels as K
import numpy as np
import pytest

from tiles.backends import registry
from tiles.backends.base import PlannedArg
from tiles.core.errors import LaunchError

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


def _estrides(a):
    return [s // a.itemsize for s in a.strides]


VIEWS = {
    "rows_sliced": lambda base: base[3:40, 5:70],
    "step": lambda base: base[1::3, 2::5],
    "transposed": lambda base: base[:60, :50].T,
    "column": lambda base: base[:, 7:8],
}


@pytest.mark.parametrize("x_view,y_view", [("rows_sliced", "step"), ("step", "transposed"),
                                            ("transposed", "column"), ("column", "rows_sliced"),
                                            ("step", "step")])
def test_strided_views_read_and_written(x_view, y_view):
    rng = np.random.default_rng(1234)
    x_base = rng.standard_normal((64, 96)).astype(np.float32)
    y_base = rng.standard_normal((64, 96)).astype(np.float32)
    x, y = VIEWS[x_view](x_base), VIEWS[y_view](y_base)
    m, n = min(x.shape[0], y.shape[0]), min(x.shape[1], y.shape[1])
    x, y = x[:m, :n], y[:m, :n]
    want_base = y_base.copy()
    VIEWS[y_view](want_base)[:m, :n] += 2 * x
    K.affine2d_kernel[(1,)](x, y, m, n, *_estrides(x), *_estrides(y), BM=64, BN=128, backend="opencl")
    np.testing.assert_allclose(y_base, want_base, rtol=1e-6)  # the gaps around the view are untouched


def test_interleaved_written_views_of_one_array():
    """Two written arguments are views of one array: each copies back only its own elements."""
    rng = np.random.default_rng(99)
    x = rng.standard_normal(301).astype(np.float32)
    pairs = rng.standard_normal(602).astype(np.float32)
    even, odd = pairs[0::2], pairs[1::2]
    K.split_kernel[(1,)](x, even, odd, 301, 1, 2, 2, BLOCK=512, backend="opencl")
    np.testing.assert_array_equal(pairs[0::2], x + 1)
    np.testing.assert_array_equal(pairs[1::2], x - 1)


def test_read_only_view_is_not_copied_back():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((32, 40)).astype(np.float32)
    x = base[::2, ::3]
    x.flags.writeable = False  # the kernel only reads it: no copy back is attempted
    y = np.zeros((16, 14), np.float32)
    K.affine2d_kernel[(1,)](x, y, 16, 14, *_estrides(x), *_estrides(y), BM=64, BN=128, backend="opencl")
    np.testing.assert_array_equal(y, 2 * x)


def test_negative_strides_are_refused_with_the_fix():
    x = np.arange(64, dtype=np.float32)[::-1]
    y = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match="negative strides.*ascontiguousarray"):
        K.split_kernel[(1,)](x, y, y, 64, -1, 1, 1, BLOCK=64, backend="opencl")


def test_concurrent_launches_of_one_kernel():
    """Many threads launch one compiled kernel at once: set_args + enqueue must not interleave."""
    threads, per_thread, n = 8, 50, 300
    K.add_kernel[(2,)](*(np.ones(n, np.float32),) * 3, n, BLOCK=256, backend="opencl")  # compile once
    failures: list[str] = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for i in range(per_thread):
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            out = np.full(n, np.nan, np.float32)
            K.add_kernel[(2,)](x, y, out, n, BLOCK=256, backend="opencl")
            if not np.array_equal(out, x + y):
                failures.append(f"thread seed {seed}, launch {i}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        pool = [threading.Thread(target=worker, args=(100 + t,)) for t in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, f"{len(failures)} of {threads * per_thread} launches were wrong: {failures[:5]}"


def test_ctrl_c_interrupts_the_wait_for_a_long_kernel():
    from tiles.backends.opencl import runtime
    out = np.zeros(128, np.float32)
    # every count is a multiple of 16, so all launches share one specialization (no compile below)
    K.spin_kernel[(1,)](out, 16, BLOCK=128, backend="opencl")
    # calibrated on a run of a quarter second or more, so that the launch's own cost (milliseconds
    # on a busy machine) does not pass for loop time and make the long kernel end too soon
    n, took = 200_000, 0.0
    while n < 2**31 // 4:
        start = time.perf_counter()
        K.spin_kernel[(1,)](out, n, BLOCK=128, backend="opencl")
        took = time.perf_counter() - start
        if took >= 0.25:
            break
        n *= 4
    per_iteration = max(took / n, 1e-9)
    iterations = int(min(6.0 / per_iteration, 2**31 - 1)) // 16 * 16  # about six seconds of kernel
    main = threading.get_ident()
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    # a process started in the background by a non-interactive shell inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: give it the one a terminal's Python has
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    began = time.perf_counter()
    timer.start()
    interrupted = False
    try:
        K.spin_kernel[(1,)](out, iterations, BLOCK=128, backend="opencl")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        waited = time.perf_counter() - began
        timer.cancel()
        runtime.device()[1].finish()  # let the abandoned kernel end before the next test
        signal.signal(signal.SIGINT, handler)
    ran = time.perf_counter() - began
    facts = (f"calibration: {n} iterations in {took:.3f} s; {iterations} iterations ran {ran:.2f} s "
             f"on {runtime.device()[2].name!r}")
    assert ran > 2.0, f"the kernel ran only {ran:.2f} s: too short to tell an interrupted wait apart ({facts})"
    assert interrupted, f"Ctrl-C at 0.3 s did not interrupt the wait ({facts})"
    assert waited < 1.5, f"Ctrl-C took {waited:.2f} s to interrupt a {ran:.1f} s kernel ({facts})"


def test_stream_is_a_command_queue_of_the_backends_context():
    import pyopencl as cl

    from tiles.backends.opencl import OpenCLBackend, runtime
    n = 300
    rng = np.random.default_rng(21)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    compiled = K.add_kernel.warmup(x, y, x, n, BLOCK=256, backend="opencl")
    plan = [PlannedArg(*p) for p in ((0, "x_ptr", True, False), (1, "y_ptr", True, False),
                                     (2, "out_ptr", True, True), (3, "n", False, False))]
    launch = OpenCLBackend().make_launcher(compiled, plan)
    out = np.full(n, np.nan, np.float32)
    launch((2, 1, 1), [x, y, out, n], stream=cl.CommandQueue(runtime.device()[0]))
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(LaunchError, match="CommandQueue made on its context"):
        launch((2, 1, 1), [x, y, out, n], stream=12345)


def test_a_grid_of_2_to_the_32_programs_is_refused_on_a_cpu_device():
    """pocl counts work-groups in 32 bits: (2**16, 2**16) ended the process with SIGILL."""
    from tiles.backends.opencl import runtime
    if not runtime.is_cpu():
        pytest.skip("the limit is pocl's (a CPU device)")
    out = np.zeros(1, np.int32)
    with pytest.raises(LaunchError, match=r"4294967296 programs.*fewer than 2\*\*32"):
        K.first_program_flag[(2**16, 2**16)](out, backend="opencl")
    K.first_program_flag[(2**10, 3)](out, backend="opencl")
    assert out[0] == 1


@pytest.mark.parametrize("past", [16, 64, 3000])
def test_a_store_past_a_host_array_is_caught_not_written_into_the_heap(past):
    """On a CPU device buffers live in the process's heap: 16 elements past the end went unnoticed
    and 64 aborted the process ("double free or corruption").  Host arrays are staged between guard
    bands; a store into one is a LaunchError and the process lives on."""
    from tiles.backends.opencl import runtime
    if not runtime.is_cpu():
        pytest.skip("guard bands are for CPU devices, whose buffers are host memory")
    out = np.full(100, -1.0, np.float32)
    with pytest.raises(LaunchError, match=rf"outside argument out_ptr \(as far as {4 * past} bytes past its end\)"):
        K.fill_first[(1,)](out, 100 + past, BLOCK=4096, backend="opencl")
    np.testing.assert_array_equal(out, np.arange(100, dtype=np.float32) + 0.5)  # the array itself is written
    K.fill_first[(1,)](out, 100, BLOCK=128, backend="opencl")  # in bounds: no error
