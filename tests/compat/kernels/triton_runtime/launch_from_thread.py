"""Launching from threads other than the first (torch runs autograd backward on its own thread):
the same kernel launched concurrently from two worker threads, each checking its own result."""

import threading

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def scale_kernel(x_ptr, out_ptr, factor, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def check(rng):
    n = 777
    inputs = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    outputs = [np.empty(n, np.float32) for _ in range(2)]
    errors = []

    def work(i):
        try:
            scale_kernel[(tiles.cdiv(n, 128),)](inputs[i], outputs[i], float(i + 2), n, BLOCK=128)
        except Exception as error:  # reported on the main thread below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    for i in range(2):
        close(outputs[i], inputs[i] * np.float32(i + 2), rtol=0, atol=0)
