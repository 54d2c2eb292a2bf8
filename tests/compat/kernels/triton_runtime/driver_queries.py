"""What wrappers ask ``tiles.runtime.driver.active`` before a launch: the current device and
target, ``utils.get_device_properties(device)`` (SM count, shared memory, warp size), used to size a
persistent reduction over a fixed number of programs."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def persistent_partial_sums(x_ptr, partial_ptr, n, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(pid * BLOCK, n, NUM_SMS * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(acc, 0))


def check(rng):
    driver = tiles.runtime.driver
    device = driver.active.get_current_device()
    target = driver.active.get_current_target()
    assert target.backend and target.warp_size > 0
    props = driver.active.utils.get_device_properties(device)
    assert props["multiprocessor_count"] >= 1 and props["max_shared_mem"] > 0
    num_sms = min(props["multiprocessor_count"], 8)
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    partial = np.empty(num_sms, np.float32)
    persistent_partial_sums[(num_sms,)](x, partial, n, NUM_SMS=num_sms, BLOCK=128)
    close(partial.astype(np.float64).sum(), x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
