"""The stack frame pocl builds for a work-group against tiles' bound (``opencl/stack.py``).

For each kernel: the work-items per program, the frame of pocl's ``_workgroup`` function (the
``sub $N, %rsp`` of its prologue, read with objdump from the shared object pocl caches), the
private bytes the OpenCL C declares times the work-items, their ratio, and ``frame_bound``.
Runs with a fresh ``POCL_CACHE_DIR`` of its own and ``TILES_ALWAYS_COMPILE=1`` (cold compiles).

    python benchmarks/pocl_stack_frames.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = tempfile.mkdtemp(prefix="pocl-frames-")
os.environ["POCL_CACHE_DIR"] = CACHE  # before pocl starts
os.environ["TILES_ALWAYS_COMPILE"] = "1"
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "backends" / "opencl")]

import numpy as np  # noqa: E402
import stack_kernels  # noqa: E402

import tiles  # noqa: E402
import tiles.language as tl  # noqa: E402
from tiles.backends.opencl import stack  # noqa: E402


@tiles.jit
def softmax_rows(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + tl.program_id(0) * n + offs, e / tl.sum(e, 0), mask=offs < n)


def frame(entry: str, threads: int) -> int:
    """The newest compiled work-group function of ``entry`` at this local size: its frame."""
    found = list(Path(CACHE).glob(f"*/*/{entry}/{threads}-1-1*/{entry}.so"))
    newest = max(found, key=lambda p: p.stat().st_mtime)
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(newest)], capture_output=True,
                          text=True, check=True).stdout
    body = text.split(f"<_pocl_kernel_{entry}_workgroup>:")[1]
    match = re.search(r"sub\s+\$0x([0-9a-f]+),%rsp", body)
    assert match, f"no frame in {newest}"
    return int(match.group(1), 16)


def main() -> None:
    rng = np.random.default_rng(0)
    rows: list[tuple[str, object, int]] = []
    for bm, bn, bk, warps in [(32, 32, 32, 4), (64, 64, 32, 4), (64, 128, 32, 4), (128, 128, 16, 8),
                              (128, 256, 64, 8)]:
        a = rng.standard_normal((2, bm, bk)).astype(np.float16)
        b = rng.standard_normal((2, bn, bk)).astype(np.float16)
        c = np.zeros((2, bm, bn), np.float16)
        args = (a, b, c, 2, bm, bn, bk)
        opts = dict(BM=bm, BN=bn, BK=bk, PROGRAMS=96, num_warps=warps, backend="opencl")
        stack_kernels.persistent_bgemm[(2,)](*args, **opts)
        compiled = stack_kernels.persistent_bgemm.warmup(*args, **opts, grid=(2,))
        name = f"descriptor GEMM {bm}x{bn}x{bk}, {warps} warps"
        rows.append((name, compiled, frame(compiled.entry, compiled.threads)))
    for width in (1024, 8192):
        x = rng.standard_normal((4, width)).astype(np.float32)
        y = np.empty_like(x)
        softmax_rows[(4,)](x, y, width, B=width, backend="opencl")
        compiled = softmax_rows.warmup(x, y, width, B=width, backend="opencl", grid=(4,))
        rows.append((f"softmax of {width}", compiled, frame(compiled.entry, compiled.threads)))
    heads = ("work-items", "frame MiB", "declared MiB", "ratio", "bound MiB")
    print(f"{'kernel':40s} " + " ".join(f"{h:>12s}" for h in heads))
    for name, compiled, f in rows:  # each frame read right after its compile: the newest of its size
        source, threads = compiled.asm["opencl"], compiled.threads
        declared = threads * stack.private_bytes(source)
        print(f"{name:40s} {threads:12d} {f / 2**20:12.2f} {declared / 2**20:12.2f} {f / declared:12.2f} "
              f"{stack.frame_bound(source, threads) / 2**20:12.2f}")


if __name__ == "__main__":
    main()
