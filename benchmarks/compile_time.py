"""Cold compile time of the softmax kernel: tiles (cuda) vs Triton, each in fresh processes.

Each measurement is one new Python process with empty compile caches that imports the
compiler and torch, makes the inputs, then times the first launch (tracing, compiling,
loading the module, running once, synchronizing).  Median of 3 processes per compiler.

    python benchmarks/compile_time.py      (on a GPU machine)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {bench!r})
flavour = {flavour!r}
import torch
from memory_bound import load_kernels
mod = load_kernels(flavour, Path(tempfile.mkdtemp()))
x = torch.randn(4096, 1024, device="cuda")
out = torch.empty_like(x)
torch.cuda.synchronize()
extra = dict(backend="cuda") if flavour == "tiles" else dict()
t = time.perf_counter()
mod.softmax_kernel[(4096,)](out, x, x.stride(0), out.stride(0), 1024, BLOCK=1024, num_warps=4, **extra)
torch.cuda.synchronize()
cold = time.perf_counter() - t
torch.testing.assert_close(out, torch.softmax(x, 1))
print(json.dumps({{"cold": cold}}))
"""


def measure(flavour: str) -> float:
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as cache:
            env = {"TILES_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache, "TILES_ALWAYS_COMPILE": "1"}
            import os
            proc = subprocess.run([sys.executable, "-c", CHILD.format(bench=str(Path(__file__).parent),
                                                                      flavour=flavour)],
                                  capture_output=True, text=True, env={**os.environ, **env})
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-2000:])
            times.append(json.loads(proc.stdout.strip().splitlines()[-1])["cold"])
    return statistics.median(times)


def main() -> None:
    results = {f: measure(f) for f in ("triton", "tiles")}
    for f, t in results.items():
        print(f"{f:8s} cold first launch of softmax 4096x1024: {t:.3f} s")
    print(f"tiles/triton: {results['tiles'] / results['triton']:.2f}")


if __name__ == "__main__":
    main()
