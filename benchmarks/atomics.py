"""Atomics and locks side by side: tiles (cuda / opencl) vs Triton, one process, plus a race count.

Kernels in the forms users write: Triton tutorial 05's layer-norm backward (partial dW/dB summed
under a spin lock, ``tl.debug_barrier()`` before the release; the compatibility corpus' module
``LOCKED``, imported as ``corpus_speed.py`` does: as written for tiles, imports rewritten for
Triton), a float ``tl.atomic_add`` scatter (histogram / split-K form) and a per-program ticket
counter.  Every column's result is checked
against torch before it is timed (``triton.testing.do_bench``, median).  ``--races N`` first runs
the locked kernel N times per backend and counts wrong elements; ``--drop-order`` compiles the
CUDA backend as it was before atomics honoured ``sem`` (atomicrmw relaxed) to show the race.

    python benchmarks/atomics.py [--backends cuda,opencl] [--races 10] [--drop-order]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from corpus_speed import COMPAT
from corpus_speed import load as load_corpus
from memory_bound import load_kernels

LOCKED = "triton_tutorials/tut05_layer_norm_bwd_locks"  # the compatibility corpus' module of the locked kernel

KERNELS = '''
@jit
def scatter_add(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    i = tl.load(idx_ptr + offs, mask=mask)
    tl.atomic_add(out_ptr + i, x, mask=mask)


@jit
def take_ticket(counter_ptr, order_ptr):
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.store(order_ptr + ticket, tl.program_id(0))
'''


def load(flavour: str, tmp: Path) -> SimpleNamespace:
    """The kernels compiled by ``flavour`` (tiles or triton): ``locked`` (tutorial 05's dx kernel),
    ``scatter_add`` and ``take_ticket``."""
    if str(COMPAT) not in sys.path:
        sys.path.insert(0, str(COMPAT))  # the corpus module imports compat_harness
    tutorial = load_corpus(LOCKED, flavour, tmp)
    own = load_kernels(flavour, tmp, KERNELS, "atomic_kernels")
    return SimpleNamespace(locked=tutorial._layer_norm_bwd_dx_fused, scatter_add=own.scatter_add,
                           take_ticket=own.take_ticket)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="cuda", help="tiles backends, comma separated")
    ap.add_argument("--races", type=int, default=0, help="runs of the locked kernel to count wrong elements")
    ap.add_argument("--drop-order", action="store_true", help="CUDA atomicrmw relaxed, as before the fix")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()

    import torch
    import triton
    from triton.testing import do_bench

    if args.drop_order:
        import dataclasses

        import tiles.backends.cuda as cuda_backend
        from tiles.backends.cuda import atomic_ops
        make = cuda_backend.nvptx_target
        cuda_backend.nvptx_target = lambda arch: dataclasses.replace(make(arch), fence_ordered_rmw=False)
        atomic_ops.ptx_atomic = lambda kind, dtype: None

    backends = [b for b in args.backends.split(",") if b]
    tmp = Path(tempfile.mkdtemp())
    tk = load("tiles", tmp)
    tr = load("triton", tmp)
    dev = torch.device("cuda")
    M, N, G, BLOCK_N = 4096, 4096, 128, 4096
    x = torch.randn(M, N, device=dev)
    dy = torch.randn(M, N, device=dev)
    w = torch.randn(N, device=dev)
    mean, rstd = x.mean(1), 1 / torch.sqrt(x.var(1, unbiased=False) + 1e-5)
    xhat = (x - mean[:, None]) * rstd[:, None]
    dw_ref, db_ref = (dy * xhat).sum(0), dy.sum(0)
    dx = torch.empty_like(x)
    dw_part = torch.zeros(G, N, device=dev)
    db_part = torch.zeros(G, N, device=dev)
    locks = torch.zeros(2 * G, dtype=torch.int32, device=dev)

    def locked(mod, **kw):
        def run():
            locks.zero_()
            mod.locked[(M,)](dx, dy, dw_part, db_part, x, w, mean, rstd, locks, x.stride(0), N,
                             GROUP_SIZE_M=G, BLOCK_SIZE_N=BLOCK_N, num_warps=8, **kw)
        return run

    def locked_errors() -> int:
        bad_w = ~torch.isclose(dw_part.sum(0), dw_ref, rtol=1e-3, atol=1e-2)
        bad_b = ~torch.isclose(db_part.sum(0), db_ref, rtol=1e-3, atol=1e-2)
        return int(bad_w.sum() + bad_b.sum())

    # OpenCL takes host (NumPy) arrays or pyopencl's own: it is raced here, not timed
    columns = {"triton": tr, **{f"tiles-{b}": tk for b in backends if b != "opencl"}}
    options = {"triton": {}, **{f"tiles-{b}": {"backend": b} for b in backends}}
    if args.races:
        print(f"lock-protected accumulation {M}x{N}, {G} locks, {args.races} runs"
              f"{' (CUDA ordering dropped)' if args.drop_order else ''}: wrong elements of {2 * N} per run")
        for col, mod in columns.items():
            wrong = []
            for _ in range(args.races):
                locked(mod, **options[col])()
                torch.cuda.synchronize()
                wrong.append(locked_errors())
            print(f"  {col:14s} {wrong}", flush=True)
        if "opencl" in backends:
            host = [t.cpu().numpy() for t in (dx, dy, dw_part, db_part, x, w, mean, rstd, locks)]
            wrong = []
            for _ in range(args.races):
                host[2][...] = 0
                host[3][...] = 0
                host[8][...] = 0
                tk.locked[(M,)](*host, x.stride(0), N, GROUP_SIZE_M=G, BLOCK_SIZE_N=BLOCK_N, num_warps=8,
                                backend="opencl")
                got_w, got_b = torch.from_numpy(host[2]).sum(0).to(dev), torch.from_numpy(host[3]).sum(0).to(dev)
                wrong.append(int((~torch.isclose(got_w, dw_ref, rtol=1e-3, atol=1e-2)).sum()
                                 + (~torch.isclose(got_b, db_ref, rtol=1e-3, atol=1e-2)).sum()))
            print(f"  {'tiles-opencl':14s} {wrong}  (NumPy arguments)", flush=True)
    if args.no_timing:
        return

    rows = []
    n_sc, bins = 1 << 24, 1 << 16
    xs = torch.randn(n_sc, device=dev)
    idx = torch.randint(0, bins, (n_sc,), device=dev, dtype=torch.int32)
    hist = torch.zeros(bins, device=dev)
    hist_ref = torch.zeros(bins, device=dev).index_add_(0, idx.long(), xs)
    programs = 1 << 16
    counter = torch.zeros(1, dtype=torch.int32, device=dev)
    order = torch.empty(programs, dtype=torch.int32, device=dev)
    for name, make_run, check in (
        ("tutorial-05 dx_fused (locks)", lambda c: locked(columns[c], **options[c]),
         lambda: locked_errors() == 0),
        ("scatter atomic_add 2^24 -> 2^16", lambda c: (lambda: (hist.zero_(), columns[c].scatter_add[
            (triton.cdiv(n_sc, 1024),)](xs, idx, hist, n_sc, BLOCK=1024, **options[c]))),
         lambda: torch.allclose(hist, hist_ref, rtol=1e-3, atol=1e-3)),
        ("ticket counter 2^16 programs", lambda c: (lambda: (counter.zero_(), columns[c].take_ticket[
            (programs,)](counter, order, **options[c]))),
         lambda: torch.equal(order.sort().values, torch.arange(programs, device=dev, dtype=torch.int32))),
    ):
        res = {}
        for col in columns:
            fn = make_run(col)
            try:
                fn()
                torch.cuda.synchronize()
                ok = check()
                res[col] = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3 if ok else float("nan")
                if not ok:
                    print(f"  {name} {col}: WRONG RESULT")
            except Exception as e:
                print(f"  {name} {col}: FAILED {type(e).__name__}: {str(e)[:300]}")
                res[col] = float("nan")
        rows.append((name, res))
        print(f"{name:34s} " + "  ".join(f"{k}={v:9.1f}us" for k, v in res.items()), flush=True)
    print(f"\n# {datetime.date.today()} {platform.node()} {torch.cuda.get_device_name()} "
          f"triton {triton.__version__} torch {torch.__version__}")
    tiles_cols = [c for c in columns if c != "triton"]
    print("| kernel | " + " | ".join(f"{c} (us)" for c in columns) + " | " +
          " | ".join(f"triton/{c}" for c in tiles_cols) + " |")
    for name, res in rows:
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in res.values()) + " | " +
              " | ".join(f"{res['triton'] / res[c]:.2f}" for c in tiles_cols) + " |")


if __name__ == "__main__":
    main()
