"""A persistent batched GEMM through tensor descriptors, in the form of Triton's
test_tensor_descriptor: 128x256x64 float16 tiles with 8 warps overflowed pocl's 8 MiB worker stack.

Run as a script (``seed [--list-platforms-first]``) it multiplies random matrices on OpenCL and
prints ``ok <max error>``, ``refused <message>``, or ``wrong <max error>``; the tests run it in a
child process, so a crash fails the test instead of ending pytest.
"""

import sys

import numpy as np

import tiles
import tiles.language as tl


@tiles.jit
def persistent_bgemm(a_ptr, b_ptr, c_ptr, B, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, PROGRAMS: tl.constexpr):
    """c[b] = a[b] @ b[b].T, each program walking tiles PROGRAMS apart; descriptors rebuilt per tile."""
    tiles_m, tiles_n, steps = tl.cdiv(M, BM), tl.cdiv(N, BN), tl.cdiv(K, BK)
    per_batch = tiles_m * tiles_n
    count = B * per_batch // PROGRAMS
    if tl.program_id(0) < B * per_batch % PROGRAMS:
        count += 1
    tile = tl.program_id(0) - PROGRAMS
    step = -1
    row = 0
    col = 0
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(steps * count):
        step = tl.where(step == steps - 1, 0, step + 1)
        if step == 0:
            tile += PROGRAMS
            batch = tile // per_batch
            row = (tile // tiles_n) % tiles_m * BM
            col = tile % tiles_n * BN
            a_desc = tl.make_tensor_descriptor(a_ptr + batch * (M * K), [M, K], [K, 1], [BM, BK])
            b_desc = tl.make_tensor_descriptor(b_ptr + batch * (N * K), [N, K], [K, 1], [BN, BK])
            c_desc = tl.make_tensor_descriptor(c_ptr + batch * (M * N), [M, N], [N, 1], [BM, BN])
        a = a_desc.load([row, step * BK])
        b = b_desc.load([col, step * BK])
        acc = tl.dot(a, b.T, acc)
        if step == steps - 1:
            c_desc.store([row, col], acc.to(tl.float16))
            acc = tl.zeros((BM, BN), dtype=tl.float32)


def run(seed: int, bm: int = 128, bn: int = 256, bk: int = 64, batches: int = 2) -> str:
    """Multiply on OpenCL and compare with NumPy (float32 products of the float16 inputs)."""
    from tiles.core.errors import OutOfResourcesError
    rng = np.random.default_rng(seed)
    m, n, k = bm, bn, 2 * bk  # two K steps: the accumulator is carried across the loop
    a = rng.standard_normal((batches, m, k)).astype(np.float16)
    b = rng.standard_normal((batches, n, k)).astype(np.float16)
    c = np.full((batches, m, n), np.nan, np.float16)
    try:
        persistent_bgemm[(batches,)](a, b, c, batches, m, n, k, BM=bm, BN=bn, BK=bk, PROGRAMS=96,
                                     num_warps=8, num_stages=3, backend="opencl")
    except OutOfResourcesError as e:
        return f"refused {e}"
    want = (a.astype(np.float32) @ b.astype(np.float32).transpose(0, 2, 1)).astype(np.float16)
    err = np.abs(c.astype(np.float32) - want.astype(np.float32))  # NaN where c was never written
    ulps = err / np.spacing(np.abs(want)).astype(np.float32)  # summation order: at most 1 ulp apart
    return f"{'ok' if np.all(ulps <= 1) else 'wrong'} {float(ulps.max())} ulp"


if __name__ == "__main__":
    if "--list-platforms-first" in sys.argv:  # pocl starts its threads before tiles can size them
        import pyopencl as cl
        cl.get_platforms()
    print(run(int(sys.argv[1])), flush=True)
