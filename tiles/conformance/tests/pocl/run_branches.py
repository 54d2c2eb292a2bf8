"""``python run_branches.py FILE.cl``: runs one of the barrier_branches_*.cl files here on pocl and
counts the stores that landed although their work-item's mask was off (columns n..15 of each row).

``barrier_branches_else.cl``: a uniform ``if``/``else`` whose branches each broadcast a row pointer
through local memory, wait at a barrier and end in ``if (m) p[col] = ...``.  Clang sinks the two
stores into one block after the branches; pocl (Debian's 3.1, LLVM 15) then treats that block's
``if (m)`` as uniform and lets work-item 0's mask decide for its work-group, so the even groups
write every column.  ``barrier_branches_split.cl``, the same code as ``if (c) {..} barrier;
if (!c) {..}``, writes only columns below n.  This is why ``cstyle/emitter.py`` writes an if/else
whose branches hold barriers in the second form.
"""

import sys

import numpy as np
import pyopencl as cl


def main(path: str) -> None:
    platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
    ctx = cl.Context([platform.get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    kernel = cl.Program(ctx, open(path).read()).build().k
    groups, n = 4, 9
    c = np.full((groups * 8, 16), 7, np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=c)
    kernel(queue, (groups * 128,), (128,), buf, np.int32(n))
    cl.enqueue_copy(queue, c, buf)
    queue.finish()
    print("stores under an off mask:", int((c[:, n:] != 7).sum()), "of", c[:, n:].size)


if __name__ == "__main__":
    main(sys.argv[1])
