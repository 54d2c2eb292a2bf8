"""``python run_cl.py FILE.cl GROUPS``: runs one of the OpenCL C files here on pocl (every work-group
increments one counter with a compare-and-swap loop; prints whether each got a distinct old value).

``barrier_in_break_loop.cl`` (the loop form ``for (;;) { if (!c) break; ... barrier ... }``) segfaults
while running on Debian's pocl 3.1 (LLVM 15); ``barrier_in_while_loop.cl``, the same loop as
``while (c) { ... }``, runs.  Both are valid OpenCL C (every work-item reaches each barrier the same
number of times: the condition is read from local memory after a barrier).  This is why
``cstyle/emitter.py`` writes while loops in the second form.
"""

import sys

import numpy as np
import pyopencl as cl


def main(path: str, groups: int) -> None:
    platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
    ctx = cl.Context([platform.get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    kernel = cl.Program(ctx, open(path).read()).build().k
    counter, old = np.zeros(1, np.int32), np.full(groups, 7, np.int32)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    counter_buf = cl.Buffer(ctx, flags, hostbuf=counter)
    old_buf = cl.Buffer(ctx, flags, hostbuf=old)
    kernel(queue, (groups * 128,), (128,), counter_buf, old_buf)
    cl.enqueue_copy(queue, counter, counter_buf)
    cl.enqueue_copy(queue, old, old_buf)
    queue.finish()
    print("counter", counter, "every old value once:", sorted(old.tolist()) == list(range(groups)))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
