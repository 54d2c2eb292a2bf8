"""Matmul in the forms users write: tiles (cuda) vs Triton, one process, same kernel text.

Forms: Triton's tutorial matmul exactly (pointer tiles advanced in the loop, rows and columns
wrapped with ``%``, K masks), the same without masks and wraps (fp16, bf16, with B transposed in
memory, and fp8 e4m3 with B transposed), a persistent matmul (each program loops over output
tiles), the same flattened as Triton's tutorial 09 writes it (one loop over every (tile, k step)
pair, the next tile chosen under ``if ki == 0``, stored under ``if ki == k_tiles - 1``; also with an
fp32 C, where ``acc.to(c_ptr.dtype.element_ty)`` is the accumulator itself), and a grouped GEMM
whose operand addresses are loaded from pointer arrays (Triton's grouped tutorial's form).  Every
configuration is offered to both compilers; the best median (``triton.testing.do_bench``) per case
is reported, as TFLOP/s = 2*M*N*K / time.  Each result is checked against torch before it is timed.

    python benchmarks/realworld_gemm.py [--sizes 4096,8192] [--forms grouped,bf16]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from memory_bound import load_kernels as load_shared  # noqa: E402

KERNELS = '''
@jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, WRAP_AND_MASK: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WRAP_AND_MASK:
        offs_am = offs_am % M
        offs_bn = offs_bn % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if WRAP_AND_MASK:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        else:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - ki * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - ki * BLOCK_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, accumulator.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))



@jit
def grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    # GROUP_M rows of output tiles walked column by column, so their B columns stay in L2
    group = tile_id // num_pid_in_group
    first_m = group * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    return first_m + tile_id % rows, (tile_id % num_pid_in_group) // rows


@jit
def flat_persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                           stride_cm, stride_cn, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # tutorial 09's flattened form: one loop over every (tile, k step) pair this program owns; a new
    # tile starts when the k counter wraps to 0, its result is stored when it reaches the last step
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    my_tiles = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        my_tiles += 1
    num_pid_in_group = GROUP_M * num_pid_n
    tile_id = start_pid - NUM_SMS
    ki = -1
    pid_m = 0
    pid_n = 0
    k_lane = tl.arange(0, BLOCK_K)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_tiles * my_tiles):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            pid_m, pid_n = grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
            rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            rows = tl.max_contiguous(tl.multiple_of(tl.where(rows < M, rows, 0), BLOCK_M), BLOCK_M)
            cols = tl.max_contiguous(tl.multiple_of(tl.where(cols < N, cols, 0), BLOCK_N), BLOCK_N)
        offs_k = ki * BLOCK_K + k_lane
        a = tl.load(a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=k_lane[None, :] < K - ki * BLOCK_K, other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=k_lane[:, None] < K - ki * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        if ki == k_tiles - 1:
            out_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            out_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            c_ptrs = c_ptr + stride_cm * out_m[:, None] + stride_cn * out_n[None, :]
            tl.store(c_ptrs, accumulator.to(c_ptr.dtype.element_ty),
                     mask=(out_m[:, None] < M) & (out_n[None, :] < N))
            accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)

@jit
def grouped_matmul(a_addrs, b_addrs, c_addrs, sizes, lds, group_size, NUM_SMS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one program per SM walks the tiles of every problem; operands come from pointer arrays
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        count = tl.cdiv(m, BLOCK_M) * tiles_n
        while tile >= first_tile and tile < first_tile + count:
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            a = tl.load(a_addrs + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_addrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_addrs + g).to(tl.pointer_type(tl.float16))
            local = tile - first_tile
            offs_m = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            a_ptrs = a + offs_m[:, None] * lda + offs_k[None, :]
            b_ptrs = b + offs_k[:, None] * ldb + offs_n[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                tl.multiple_of(a_ptrs, [16, 16])  # the addresses came from memory: promise alignment
                tl.multiple_of(b_ptrs, [16, 16])
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * ldb
            c_ptrs = c + ldc * offs_m[:, None] + offs_n[None, :]
            tl.store(c_ptrs, acc.to(tl.float16))
            tile += NUM_SMS
        first_tile += count
'''

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 128, 32, 4, 4), (128, 256, 64, 8, 4)]


def best_of_configs(case: str, columns: dict[str, tuple[Any, dict[str, Any]]], launch: Callable[..., None],
                    clear: Callable[[], Any], read: Callable[[], Any], ref: Any, flops: float,
                    configs: Sequence[tuple[int, ...]] = CONFIGS,
                    setting: Callable[[str], AbstractContextManager[Any]] = lambda col: contextlib.nullcontext(),
                    ) -> dict[str, tuple[float, str]]:
    """Each column's best TFLOP/s over ``configs`` (BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
    num_stages) and that configuration's name.  ``columns`` maps a column to its kernel module
    and extra launch keywords; ``launch(module, config, keywords)`` runs the case once.  Each
    configuration's result (``read()`` after ``clear()``) is checked against ``ref`` (relative
    error under 1e-2) before it is timed (``do_bench`` median); wrong results and failures are
    printed and skipped.  ``setting(column)`` is entered around each configuration's launches."""
    import torch
    from triton.testing import do_bench

    best: dict[str, tuple[float, str]] = {}
    for col, (mod, kw) in columns.items():
        for cfg in configs:
            name = "x".join(map(str, cfg[:3])) + f" w{cfg[3]} s{cfg[4]}"
            try:
                with setting(col):
                    clear()
                    launch(mod, cfg, kw)
                    torch.cuda.synchronize()
                    err = ((read().float() - ref).norm() / ref.norm()).item()
                    if not err < 1e-2:
                        print(f"  {case} {col} {name}: wrong result (rel {err:.2e})")
                        continue
                    ms = do_bench(lambda: launch(mod, cfg, kw), warmup=25, rep=100, return_mode="median")
            except Exception as e:  # a config that fails to compile: report it, go on
                print(f"  {case} {col} {name}: failed: {type(e).__name__}: {str(e)[:160]}")
                continue
            tf = flops / (ms * 1e-3) / 1e12
            print(f"  {case:34s} {col:9s} {name:18s} {tf:7.1f} TFLOP/s", flush=True)
            if tf > best.get(col, (0.0, ""))[0]:
                best[col] = (tf, name)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--forms", default="", help="comma-separated substrings of the case names to run")
    args = ap.parse_args()

    import torch

    tmp = Path(tempfile.mkdtemp())
    mods = {"tiles": load_shared("tiles", tmp, KERNELS, "realworld_gemm"),
            "triton": load_shared("triton", tmp, KERNELS, "realworld_gemm")}
    extra = {"tiles": {"backend": "cuda"}, "triton": {}}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wanted = [f for f in args.forms.split(",") if f]
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        m = n = k = size
        flops = 2.0 * m * n * k

        def operands(dtype, trans_b=False, out=None):
            def randn(shape):
                return torch.randn(shape, device="cuda").to(dtype)
            a = randn((m, k))
            b = randn((n, k)).T if trans_b else randn((k, n))
            c = torch.empty((m, n), device="cuda", dtype=out or dtype)
            return a, b, c, (a.float() @ b.float())

        def tutorial(ops, wrap):
            a, b, c, _ = ops
            strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

            def launch(mod, cfg, kw):
                bm, bn, bk, warps, stages = cfg
                mod.tutorial_matmul[(math.ceil(m / bm) * math.ceil(n / bn),)](
                    a, b, c, m, n, k, *strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                    WRAP_AND_MASK=wrap, num_warps=warps, num_stages=stages, **kw)
            return launch

        def persistent(ops, flat=False):
            a, b, c, _ = ops
            strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

            def launch(mod, cfg, kw):
                bm, bn, bk, warps, stages = cfg
                tiles_total = math.ceil(m / bm) * math.ceil(n / bn)
                kernel = mod.flat_persistent_matmul if flat else mod.persistent_matmul
                kernel[(min(sms, tiles_total),)](
                    a, b, c, m, n, k, *strides, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                    num_warps=warps, num_stages=stages, **kw)
            return launch

        def grouped():
            # four problems of (size/2)^3: half the FLOPs of one size^3 product
            h = size // 2
            group = [tuple(torch.randn(shape, device="cuda", dtype=torch.float16) for shape in ((h, h), (h, h)))
                     for _ in range(4)]
            outs = [torch.empty((h, h), device="cuda", dtype=torch.float16) for _ in group]
            ref = torch.cat([(a @ b).float() for a, b in group])
            addr = [torch.tensor(v, device="cuda", dtype=torch.int64) for v in
                    ([a.data_ptr() for a, _ in group], [b.data_ptr() for _, b in group], [c.data_ptr() for c in outs])]
            sizes = torch.tensor([h, h, h] * 4, device="cuda", dtype=torch.int32)
            lds = torch.tensor([h, h, h] * 4, device="cuda", dtype=torch.int32)
            out = torch.cat(outs)  # refreshed from `outs` after each launch by `result`

            def launch(mod, cfg, kw, inputs=group):  # `inputs`: the tensors `addr` points at stay alive
                bm, bn, bk, warps, stages = cfg
                mod.grouped_matmul[(sms,)](*addr, sizes, lds, 4, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                           num_warps=warps, num_stages=stages, **kw)

            def result():
                torch.cat(outs, out=out)
                return out
            return launch, result, ref, [*outs]

        fp16 = operands(torch.float16)
        cases = [("tutorial (wrap + K masks)", fp16, tutorial(fp16, True)),
                 ("tutorial (no masks)", fp16, tutorial(fp16, False)),
                 ("persistent", fp16, persistent(fp16)),
                 ("flat persistent (tutorial 09)", fp16, persistent(fp16, flat=True))]
        fp32_out = operands(torch.float16, out=torch.float32)  # c_ptr.dtype.element_ty: the accumulator as is
        cases.append(("flat persistent, fp32 C", fp32_out, persistent(fp32_out, flat=True)))
        bf16 = operands(torch.bfloat16)
        cases.append(("tutorial bf16", bf16, tutorial(bf16, False)))
        tb = operands(torch.float16, trans_b=True)
        cases.append(("tutorial, B transposed", tb, tutorial(tb, False)))
        fp8 = operands(torch.float8_e4m3fn, trans_b=True, out=torch.float16)  # wgmma reads fp8 B K-major
        cases.append(("tutorial fp8 e4m3, B transposed", fp8, tutorial(fp8, False)))
        g_launch, g_result, g_ref, g_outs = grouped()
        cases.append(("grouped (4 x (n/2)^3)", (None, None, None, g_ref), g_launch))
        for label, ops, launch in cases:
            if wanted and not any(w in label for w in wanted):
                continue
            flops = 2.0 * m * n * k / (2 if label.startswith("grouped") else 1)  # 4 * 2 * (n/2)^3 = n^3
            ref = ops[3]
            if label.startswith("grouped"):
                clear, read = (lambda: [o.zero_() for o in g_outs]), g_result
            else:
                clear, read = ops[2].zero_, (lambda c=ops[2]: c)
            columns = {col: (mod, extra[col]) for col, mod in mods.items()}
            best = best_of_configs(f"{size}^3 {label}", columns, launch, clear, read, ref, flops)
            rows.append((f"{label} {size}^3", best))

    print(f"\n{torch.cuda.get_device_name()}  (TFLOP/s, best config of the same {len(CONFIGS)})")
    print(f"{'case':40s} {'tiles':>26s} {'triton':>26s} {'tiles/triton':>12s}")
    for name, best in rows:
        t = best.get("tiles", (0.0, "-"))
        r = best.get("triton", (float("nan"), "-"))
        print(f"{name:40s} {f'{t[0]:.1f} ({t[1]})':>26s} {f'{r[0]:.1f} ({r[1]})':>26s} {t[0] / r[0]:12.2f}")


if __name__ == "__main__":
    main()
