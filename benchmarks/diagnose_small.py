"""Where the time goes for small launches: GPU time back-to-back vs do_bench, tiles vs Triton.

python benchmarks/diagnose_small.py   (on a GPU machine)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels  # noqa: E402


def main() -> None:
    import torch
    from triton.testing import do_bench
    tmp = Path(tempfile.mkdtemp())
    tk, tr = load_kernels("tiles", tmp), load_kernels("triton", tmp)
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (n // 1024,)
    fns = {"triton": lambda: tr.add_kernel[grid](x, y, out, n, BLOCK=1024),
           "tiles": lambda: tk.add_kernel[grid](x, y, out, n, BLOCK=1024, backend="cuda")}
    for name, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        big = torch.empty(1 << 28, device="cuda", dtype=torch.int8)
        for _ in range(3):
            big.zero_()  # keep the GPU busy so the launches queue up
            start.record()
            for _ in range(200):
                fn()
            end.record()
            torch.cuda.synchronize()
        b2b = start.elapsed_time(end) / 200 * 1e3
        db = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
        print(f"{name:8s} back-to-back {b2b:7.2f} us   do_bench {db:7.2f} us")


if __name__ == "__main__":
    main()
