"""Host cost of one launch: tiles (cuda) vs Triton, same empty-ish kernel, same process.

Times N back-to-back launches of a kernel that does almost nothing (one program,
one store) with a host clock and a final synchronize, so the figure is what the
Python launch path costs.  Run on a GPU machine: python benchmarks/launch_overhead.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels  # noqa: E402


def per_launch_us(fn, sync, n: int = 2000, repeats: int = 7) -> float:
    for _ in range(200):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    import torch
    tmp = Path(tempfile.mkdtemp())
    tk, tr = load_kernels("tiles", tmp), load_kernels("triton", tmp)
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    sync = torch.cuda.synchronize
    results = {
        "triton": per_launch_us(lambda: tr.add_kernel[(1,)](x, y, out, 1024, BLOCK=1024), sync),
        "tiles-cuda": per_launch_us(lambda: tk.add_kernel[(1,)](x, y, out, 1024, BLOCK=1024,
                                                               backend="cuda"), sync),
    }
    torch.testing.assert_close(out, x + y)
    for k, v in results.items():
        print(f"{k:12s} {v:7.2f} us per launch")
    print(f"tiles/triton launch cost: {results['tiles-cuda'] / results['triton']:.2f}")


if __name__ == "__main__":
    main()
