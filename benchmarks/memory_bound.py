"""Memory-bound kernels side by side: tiles (cuda / opencl) vs Triton vs torch, one process.

The kernel source is written once (KERNELS below) and imported twice: once with
``import tiles as jitlib; import tiles.language as tl`` and once with Triton's
imports, so both compilers see the same program.  Timing uses
``triton.testing.do_bench`` (CUDA events, warm-up, L2 flushed, median) for every
column.  Run on a GPU machine:

    python benchmarks/memory_bound.py [--backends cuda,opencl] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import platform
import sys
import tempfile
from pathlib import Path

KERNELS = '''
@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


@jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps,
                      BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
'''

HEADERS = {
    "tiles": "import tiles as jitlib\nimport tiles.language as tl\njit = jitlib.jit\n",
    "triton": "import triton as jitlib\nimport triton.language as tl\njit = jitlib.jit\n",
}


def load_kernels(flavour: str, tmpdir: Path, source: str = KERNELS, stem: str = "bench_kernels"):
    """Import ``source`` as a module whose ``jit``/``tl`` are tiles' or Triton's."""
    path = tmpdir / f"{stem}_{flavour}.py"
    path.write_text(HEADERS[flavour] + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def softmax_warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def cases(quick: bool):
    add_sizes = [2**20, 2**24] if quick else [2**20, 2**24, 2**28]
    soft = [(4096, 1024)] if quick else [(4096, 1024), (4096, 4096), (16384, 8192)]
    ln = [(4096, 1024)] if quick else [(4096, 1024), (4096, 8192)]
    return add_sizes, soft, ln


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="cuda", help="tiles backends to time, comma separated")
    ap.add_argument("--quick", action="store_true", help="smaller sizes only")
    args = ap.parse_args()

    import torch
    import triton
    from triton.testing import do_bench

    backends = [b for b in args.backends.split(",") if b]
    tmp = Path(tempfile.mkdtemp())
    tk, tr = load_kernels("tiles", tmp), load_kernels("triton", tmp)
    dev = torch.device("cuda")
    rows = []

    def bench(name: str, shape: str, nbytes: int, launch, check) -> None:
        results = {}
        for col, fn in launch.items():
            try:
                fn()
                torch.cuda.synchronize()
                check(col)
                ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
                results[col] = nbytes / (ms * 1e-3) / 1e9
            except Exception as e:  # report, keep going with the other columns
                print(f"  {name} {shape} {col}: FAILED {type(e).__name__}: {str(e)[:300]}")
                results[col] = float("nan")
        rows.append((name, shape, results))
        cells = "  ".join(f"{k}={v:8.1f}" for k, v in results.items())
        print(f"{name:10s} {shape:>14s}  GB/s: {cells}", flush=True)

    add_sizes, soft, ln = cases(args.quick)
    for n in add_sizes:
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out = torch.empty_like(x)
        ref = x + y
        block = 1024
        grid = (triton.cdiv(n, block),)
        launch = {"triton": lambda: tr.add_kernel[grid](x, y, out, n, BLOCK=block, num_warps=4),
                  "torch": lambda: torch.add(x, y, out=out)}
        for b in backends:
            launch[f"tiles-{b}"] = (lambda b=b: tk.add_kernel[grid](x, y, out, n, BLOCK=block,
                                                                    num_warps=4, backend=b))

        def check_add(col: str) -> None:
            torch.testing.assert_close(out, ref)
            out.fill_(float("nan"))
        bench("add", f"2^{n.bit_length() - 1}", 3 * n * 4, launch, check_add)

    for m, n in soft:
        x = torch.randn(m, n, device=dev)
        out = torch.empty_like(x)
        ref = torch.softmax(x, dim=1)
        block = next_pow2(n)
        w = softmax_warps(block)
        launch = {"triton": lambda: tr.softmax_kernel[(m,)](out, x, x.stride(0), out.stride(0), n,
                                                           BLOCK=block, num_warps=w),
                  "torch": lambda: torch.softmax(x, dim=1)}
        for b in backends:
            launch[f"tiles-{b}"] = (lambda b=b: tk.softmax_kernel[(m,)](
                out, x, x.stride(0), out.stride(0), n, BLOCK=block, num_warps=w, backend=b))

        def check_soft(col: str) -> None:
            if col != "torch":
                torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
                out.fill_(float("nan"))
        bench("softmax", f"{m}x{n}", 2 * m * n * 4, launch, check_soft)

    for m, n in ln:
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        w_ = torch.rand(n, device=dev, dtype=torch.float16)
        b_ = torch.rand(n, device=dev, dtype=torch.float16)
        y = torch.empty_like(x)
        mean = torch.empty(m, device=dev, dtype=torch.float32)
        rstd = torch.empty(m, device=dev, dtype=torch.float32)
        ref = torch.nn.functional.layer_norm(x.float(), (n,), w_.float(), b_.float(), 1e-5).half()
        block = next_pow2(n)
        warps = min(max(block // 256, 1), 8)
        launch = {"triton": lambda: tr.layer_norm_kernel[(m,)](x, y, w_, b_, mean, rstd, x.stride(0), n, 1e-5,
                                                              BLOCK=block, num_warps=warps),
                  "torch": lambda: torch.nn.functional.layer_norm(x, (n,), w_, b_, 1e-5)}
        for b in backends:
            launch[f"tiles-{b}"] = (lambda b=b: tk.layer_norm_kernel[(m,)](
                x, y, w_, b_, mean, rstd, x.stride(0), n, 1e-5, BLOCK=block, num_warps=warps, backend=b))

        def check_ln(col: str) -> None:
            if col != "torch":
                torch.testing.assert_close(y, ref, atol=2e-2, rtol=1e-2)
                y.fill_(float("nan"))
        bench("layernorm", f"{m}x{n}", 2 * m * n * 2, launch, check_ln)

    print(f"\n# {datetime.date.today()} {platform.node()} {torch.cuda.get_device_name()} "
          f"triton {triton.__version__} torch {torch.__version__}")
    print("| kernel | shape | " + " | ".join(rows[0][2].keys()) + " | " +
          " | ".join(f"{c}/triton" for c in rows[0][2] if c.startswith("tiles")) + " |")
    for name, shape, res in rows:
        ratios = [res[c] / res["triton"] for c in res if c.startswith("tiles")]
        print(f"| {name} | {shape} | " + " | ".join(f"{v:.0f}" for v in res.values()) + " | " +
              " | ".join(f"{r:.2f}" for r in ratios) + " |")


if __name__ == "__main__":
    main()
