"""Matmul through tensor descriptors: tiles (cuda, without and with TILES_TMA=1) vs Triton, one
process, same kernel text, same configurations.

Two forms, written here in the manner of Triton's tutorial 09: a descriptor matmul with one
output tile per program, and a persistent one (each program loops over output tiles, stepping
by the number of SMs).  A is M x K, B is N x K (K-major, read as ``b.T``), C is M x N; every
operand is a device-side ``tl.make_tensor_descriptor``.  Each result is checked against torch
before it is timed (``triton.testing.do_bench`` median); the best configuration per column is
reported as TFLOP/s = 2*M*N*K / time.

    python benchmarks/tma_gemm.py [--sizes 4096,8192] [--forms persistent]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels  # noqa: E402
from realworld_gemm import best_of_configs  # noqa: E402

KERNELS = '''
@jit
def descriptor_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@jit
def persistent_descriptor_matmul(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        first_m = (tile // per_group) * GROUP_M
        rows_in_group = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows_in_group
        pid_n = (tile % per_group) // rows_in_group
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([pid_m * BLOCK_M, k])
            b = b_desc.load([pid_n * BLOCK_N, k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))
'''

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 4)]
COLUMNS = ("tiles", "tiles+tma", "triton")


@contextlib.contextmanager
def tma(on: bool) -> Iterator[None]:
    """TILES_TMA for the compiles and launches of one column."""
    before = os.environ.get("TILES_TMA")
    os.environ["TILES_TMA"] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TILES_TMA"]
        else:
            os.environ["TILES_TMA"] = before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--forms", default="", help="comma-separated substrings of the case names to run")
    args = ap.parse_args()

    import torch
    import triton

    import tiles

    def scratch(size: int, alignment: int, stream: object) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)
    triton.set_allocator(scratch)  # Triton builds device-side descriptors in global scratch memory
    tiles.set_allocator(scratch)

    tmp = Path(tempfile.mkdtemp())
    # one module per column: separate kernel objects, so separate in-memory compile caches
    mods = {"tiles": load_kernels("tiles", tmp, KERNELS, "tma_gemm_plain"),
            "tiles+tma": load_kernels("tiles", tmp, KERNELS, "tma_gemm_tma"),
            "triton": load_kernels("triton", tmp, KERNELS, "tma_gemm")}
    extra = {"tiles": {"backend": "cuda"}, "tiles+tma": {"backend": "cuda"}, "triton": {}}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wanted = [f for f in args.forms.split(",") if f]
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        m = n = k = size
        flops = 2.0 * m * n * k
        gen = torch.Generator(device="cuda").manual_seed(size)
        a = torch.randn((m, k), device="cuda", generator=gen).half()
        b = torch.randn((n, k), device="cuda", generator=gen).half()
        c = torch.empty((m, n), device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float().T

        def one_tile_per_program(mod, cfg, kw):
            bm, bn, bk, warps, stages = cfg
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
            mod.descriptor_matmul[grid](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                        num_warps=warps, num_stages=stages, **kw)

        def persistent(mod, cfg, kw):
            bm, bn, bk, warps, stages = cfg
            grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)
            mod.persistent_descriptor_matmul[grid](a, b, c, m, n, k, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn,
                                                   BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages,
                                                   **kw)

        columns = {col: (mods[col], extra[col]) for col in COLUMNS}
        for label, launch in (("descriptor", one_tile_per_program), ("persistent descriptor", persistent)):
            if wanted and not any(w in label for w in wanted):
                continue
            # the compile and every launch of a column see its TILES_TMA
            best = best_of_configs(f"{size}^3 {label}", columns, launch, c.zero_, lambda: c, ref, flops, CONFIGS,
                                   lambda col: tma(col == "tiles+tma"))
            rows.append((f"{label} {size}^3", best))

    print(f"\n{torch.cuda.get_device_name()}  (TFLOP/s, best config of the same {len(CONFIGS)})")
    print(f"{'case':30s} " + " ".join(f"{col:>24s}" for col in COLUMNS) + f" {'tiles/triton':>12s} {'tma/triton':>10s}")
    for name, best in rows:
        cells = [best.get(col, (float("nan"), "-")) for col in COLUMNS]
        ratio = [cells[i][0] / cells[2][0] for i in (0, 1)]
        print(f"{name:30s} " + " ".join(f"{f'{t:.1f} ({cfg})':>24s}" for t, cfg in cells)
              + f" {ratio[0]:12.2f} {ratio[1]:10.2f}")


if __name__ == "__main__":
    main()
