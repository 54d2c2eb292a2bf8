"""Real-world kernels from the compatibility corpus, tiles vs Triton on CUDA, one source for both.

Each case takes its kernels from ``tests/compat/kernels/<project>/<name>.py`` (written in the styles of
Liger-Kernel, FlagGems, vLLM, SGLang, flash-linear-attention, Mamba and Unsloth).  The module is
imported twice from temporary copies: as written (``import tiles``) and with its imports rewritten
to Triton's (``import triton as tiles``, ``import triton.language as tl``,
``triton.language.extra...``), so both compilers compile the same kernel text.  A case builds
torch CUDA tensors at sizes those libraries benchmark, launches the way the library does (grid,
BLOCK sizes, num_warps), and checks each flavour's outputs against torch before timing anything (and
notes where tiles' and Triton's differ by more than that tolerance); a flavour that raises or computes
a wrong answer is printed as FAILED with its error and not timed.  Timing is
``triton.testing.do_bench`` (warm-up, L2 flushed between calls, median) of the launch alone, for both.

Columns: microseconds per call for Triton and tiles, ``ratio`` = Triton time / tiles time (above 1:
tiles is faster) and the effective bandwidth of each: the bytes a perfect kernel must move (every
input read once, every output written once) over the time.  At the end: the geometric mean of the
ratios and the cases below 0.9.  From the repository root, with torch and Triton installed:

    python benchmarks/corpus_speed.py [--cases rms_norm,cross_entropy] [--quick] [--list]

``--interpret`` needs no GPU: every case at tiny sizes on torch CPU tensors, tiles through its
interpreter (``TILES_INTERPRET=1``) and Triton through its own (``TRITON_INTERPRET=1``), both checked
against torch; nothing is timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / "tests" / "compat"  # the corpus modules import compat_harness from here
KERNELS = COMPAT / "kernels"

# tiles -> Triton: the imports are all that differs between the two flavours of a module
TO_TRITON = (
    (re.compile(r"^(\s*)import tiles\.language as tl\s*$", re.M), r"\1import triton.language as tl"),
    (re.compile(r"^(\s*)from tiles\.language\b", re.M), r"\1from triton.language"),
    (re.compile(r"^(\s*)import tiles\s*$", re.M), r"\1import triton as tiles"),
)
LEFT_OVER = re.compile(r"^\s*(?:from|import) tiles\b", re.M)

BF16 = (2e-2, 2e-2)  # (rtol, atol): storage rounding of bf16 / fp16 outputs
F32 = (1e-4, 1e-4)
SUMS = (1e-3, 1e-2)  # fp32 sums over many rows, in another order than torch's
EXACT = (0.0, 0.0)


def triton_source(text: str) -> str:
    """The module's text with Triton's imports; ValueError where it uses tiles beyond tiles.language."""
    for pattern, replacement in TO_TRITON:
        text = pattern.sub(replacement, text)
    if found := LEFT_OVER.search(text):
        raise ValueError(f"no Triton equivalent for: {found.group(0).strip()}")
    return text


def load(stem: str, flavour: str, tmp: Path) -> Any:
    """Import a copy of kernels/<stem>.py (``project/name``), as is (tiles) or rewritten (triton): Triton's jit
    reads source files."""
    text = (KERNELS / f"{stem}.py").read_text()
    if flavour == "triton":
        text = triton_source(text)
    name = f"corpus_{flavour}_{stem.replace('/', '_')}"
    path = tmp / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Ctx:
    torch: Any
    dev: Any
    interpret: bool
    sm: int  # programs of a persistent launch: the SM count, as the libraries ask torch

    def randn(self, *shape: int, dtype: Any = None, scale: float = 1.0, shift: float = 0.0) -> Any:
        x = self.torch.randn(*shape, device=self.dev) * scale + shift
        return x.to(dtype or self.torch.float32)

    def empty(self, *shape: int, dtype: Any = None) -> Any:
        return self.torch.empty(*shape, device=self.dev, dtype=dtype or self.torch.float32)


@dataclass
class Run:
    launch: Callable[[Any], Any]  # launches the case's kernels from one flavour of the module
    outputs: Callable[[], list[Any]]  # what a launch produced (after any host-side sum of partials)
    refs: list[Any]  # torch's answer for each output
    tols: list[tuple[float, float]]  # (rtol, atol) of each output
    nbytes: int  # inputs read once + outputs written once
    shape: str
    dtype: str
    reset: Callable[[], Any] | None = None  # restores what a launch overwrites in place


@dataclass
class Case:
    name: str
    module: str
    make: Callable[[Ctx, tuple[int, ...]], Run]
    sizes: list[tuple[int, ...]]
    quick: tuple[int, ...]
    tiny: tuple[int, ...]


CASES: list[Case] = []


def case(name: str, module: str, sizes: list[tuple[int, ...]], quick: tuple[int, ...], tiny: tuple[int, ...]):
    def register(make: Callable[[Ctx, tuple[int, ...]], Run]) -> Callable[[Ctx, tuple[int, ...]], Run]:
        CASES.append(Case(name, module, make, sizes, quick, tiny))
        return make
    return register


def np2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def liger_settings(n: int) -> tuple[int, int]:
    """Liger's (and Unsloth's) calculate_settings: the whole row in one block, warps by block size."""
    block = np2(n)
    return block, 32 if block >= 32768 else 16 if block >= 8192 else 8 if block >= 2048 else 4


# ---------------------------------------------------------------- Liger-Kernel

@case("liger_rms_norm_fwd", "liger/rms_norm", [(4096, 4096), (16384, 8192)], (4096, 4096), (7, 93))
def liger_rms_norm_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x, w = c.randn(m, n, dtype=t.bfloat16), c.randn(n, dtype=t.bfloat16, scale=0.1, shift=1.0)
    y, rstd = t.empty_like(x), c.empty(m)
    block, warps = liger_settings(n)
    launch = lambda k: k._rms_norm_forward_kernel[(m,)](  # casting_mode 0: 'llama', Liger's default
        y, y.stride(0), x, x.stride(0), w, 0, rstd, 1, n, 1e-6, 0.0, casting_mode=0, BLOCK_SIZE=block,
        num_warps=warps)
    r = t.rsqrt(x.float().square().mean(1) + 1e-6)
    ref = (x.float() * r[:, None]).bfloat16().float() * w.float()
    return Run(launch, lambda: [y, rstd], [ref, r], [BF16, F32], 2 * m * n * 2, f"{m}x{n}", "bf16")


@case("liger_rms_norm_bwd", "liger/rms_norm", [(4096, 4096), (16384, 8192)], (4096, 4096), (10, 93))
def liger_rms_norm_bwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x, dy = c.randn(m, n, dtype=t.bfloat16), c.randn(m, n, dtype=t.bfloat16)
    w = c.randn(n, dtype=t.bfloat16, scale=0.1, shift=1.0)
    rstd = t.rsqrt(x.float().square().mean(1) + 1e-6)
    dx, dw = t.empty_like(x), c.empty(c.sm, n)
    block, warps = liger_settings(n)
    per_program = cdiv(m, c.sm)
    launch = lambda k: k._rms_norm_backward_kernel[(c.sm,)](
        dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), w, rstd, 1, dw, dw.stride(0), m, n, 0.0,
        per_program, BLOCK_SIZE=block, num_warps=warps)
    xf, r = x.float(), rstd[:, None]
    g = dy.float() * w.float()
    ref_dx = r * g - r ** 3 / n * (g * xf).sum(1, keepdim=True) * xf
    ref_dw = (dy.float() * xf * r).sum(0)
    return Run(launch, lambda: [dx, dw.sum(0)], [ref_dx, ref_dw], [BF16, SUMS], 3 * m * n * 2, f"{m}x{n}", "bf16")


@case("liger_layer_norm_fwd", "liger/layer_norm", [(4096, 4096), (8192, 8192)], (4096, 4096), (9, 200))
def liger_layer_norm_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x = c.randn(m, n, dtype=t.float32, scale=3.0)
    w, b = c.randn(n), c.randn(n)
    y, mean, rstd = t.empty_like(x), c.empty(m), c.empty(m)
    block, warps = liger_settings(n)
    launch = lambda k: k._layer_norm_forward_kernel[(m,)](
        y, y.stride(0), x, x.stride(0), w, 0, b, 0, mean, 1, rstd, 1, n, 1e-6, BLOCK_SIZE=block, num_warps=warps)
    var, mu = t.var_mean(x, 1, correction=0)
    ref = t.nn.functional.layer_norm(x, (n,), w, b, 1e-6)
    return Run(launch, lambda: [y, mean, rstd], [ref, mu, t.rsqrt(var + 1e-6)], [(1e-3, 1e-3), F32, (1e-3, 0)],
               2 * m * n * 4, f"{m}x{n}", "fp32")


@case("liger_fused_add_rms_norm_fwd", "liger/fused_add_rms_norm", [(4096, 4096), (16384, 8192)], (4096, 4096),
      (37, 129))
def liger_fused_add_rms_norm_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x, r = c.randn(m, n, dtype=t.bfloat16), c.randn(m, n, dtype=t.bfloat16, scale=2.0)
    w = c.randn(n, dtype=t.bfloat16, scale=0.1, shift=1.0)
    y, s, rstd = t.empty_like(x), t.empty_like(x), c.empty(m)
    block, warps = liger_settings(n)
    launch = lambda k: k._fused_add_rms_norm_fwd[(m,)](
        y, n, s, n, x, n, r, n, w, rstd, n, 1e-6, 0.0, 0, BLOCK_SIZE=block, num_warps=warps)
    ref_s = (x.float() + r.float()).bfloat16().float()
    ref_r = t.rsqrt(ref_s.square().mean(1) + 1e-6)
    ref_y = (ref_s * ref_r[:, None]).bfloat16().float() * w.float()
    return Run(launch, lambda: [y, s, rstd], [ref_y, ref_s, ref_r], [BF16, EXACT, F32], 4 * m * n * 2,
               f"{m}x{n}", "bf16")


@case("liger_cross_entropy", "liger/cross_entropy", [(4096, 32000), (4096, 128256)], (2048, 32000), (7, 301))
def liger_cross_entropy(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (bt, v) = c.torch, size
    x0 = c.randn(bt, v, dtype=t.bfloat16, scale=4.0)
    labels = t.randint(0, v, (bt,), device=c.dev)
    labels[::16] = -100
    keep = labels != -100
    n_keep = int(keep.sum())
    x, loss = x0.clone(), c.empty(bt)
    block = min(128 if c.interpret else 32768, np2(v))  # Liger: min(65536 // 2, next_power_of_2(V))

    def reset() -> None:
        x.copy_(x0)
        loss.zero_()
    launch = lambda k: k.liger_cross_entropy_kernel[(bt,)](
        x, x.stride(0), labels, 1, loss, 1, v, n_keep, -100, label_smoothing=0.0, reduction="mean", RETURN_Z=0,
        BLOCK_SIZE=block, num_warps=32)
    xf = x0.float()
    lse = t.logsumexp(xf, 1)
    safe = labels.clamp(min=0)
    ref_loss = t.where(keep, lse - xf.gather(1, safe[:, None])[:, 0], 0.0) / n_keep
    grad = t.softmax(xf, 1)
    grad[t.arange(bt, device=c.dev), safe] -= 1.0
    ref_grad = t.where(keep[:, None], grad / n_keep, 0.0)
    return Run(launch, lambda: [loss, x], [ref_loss, ref_grad], [(1e-3, 1e-6), (2e-2, 1e-8)], 2 * bt * v * 2,
               f"{bt}x{v}", "bf16", reset)


@case("liger_swiglu_fwd", "liger/swiglu", [(4096, 11008), (8192, 14336)], (2048, 11008), (6, 150))
def liger_swiglu_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    a, b = c.randn(m, n, dtype=t.bfloat16, scale=3.0), c.randn(m, n, dtype=t.bfloat16)
    out = t.empty_like(a)
    block, warps = liger_settings(n)
    launch = lambda k: k._swiglu_forward_kernel[(m,)](a, b, out, out.stride(0), n_cols=n, BLOCK_SIZE=block,
                                                      num_warps=warps)
    ref = t.nn.functional.silu(a.float()).bfloat16().float() * b.float()
    return Run(launch, lambda: [out], [ref], [BF16], 3 * m * n * 2, f"{m}x{n}", "bf16")


@case("liger_swiglu_bwd", "liger/swiglu", [(4096, 11008), (8192, 14336)], (2048, 11008), (6, 150))
def liger_swiglu_bwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    a0, b0 = c.randn(m, n, dtype=t.bfloat16, scale=3.0), c.randn(m, n, dtype=t.bfloat16)
    dc = c.randn(m, n, dtype=t.bfloat16)
    a, b = a0.clone(), b0.clone()  # the gradients overwrite the inputs, as in Liger
    block, warps = liger_settings(n)

    def reset() -> None:
        a.copy_(a0)
        b.copy_(b0)
    launch = lambda k: k._swiglu_backward_kernel[(m,)](dc, a, b, a.stride(0), n_cols=n, BLOCK_SIZE=block,
                                                       num_warps=warps)
    af, sig = a0.float(), t.sigmoid(a0.float())
    ref_db = dc.float() * af * sig
    ref_da = dc.float() * (af * sig * (1 - sig) + sig) * b0.float()
    return Run(launch, lambda: [a, b], [ref_da, ref_db], [BF16, BF16], 5 * m * n * 2, f"{m}x{n}", "bf16", reset)


@case("liger_geglu_tanh_fwd", "liger/geglu_tanh", [(4096, 11008), (8192, 14336)], (2048, 11008), (5, 99))
def liger_geglu_tanh_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    a, b = c.randn(m, n, dtype=t.bfloat16, scale=3.0), c.randn(m, n, dtype=t.bfloat16)
    out = t.empty_like(a)
    block, warps = liger_settings(n)
    launch = lambda k: k._geglu_tanh_forward_kernel[(m,)](a, b, out, out.stride(0), n_cols=n, BLOCK_SIZE=block,
                                                          num_warps=warps)
    ref = t.nn.functional.gelu(a.float(), approximate="tanh").bfloat16().float() * b.float()
    return Run(launch, lambda: [out], [ref], [BF16], 3 * m * n * 2, f"{m}x{n}", "bf16")


@case("liger_rope", "liger/rope", [(4, 4096, 32, 8, 128), (1, 16384, 64, 8, 128)], (1, 4096, 32, 8, 128),
      (2, 5, 3, 1, 12))
def liger_rope(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (bsz, sl, n_qh, n_kh, hd) = c.torch, size
    q0 = c.randn(bsz, sl, n_qh, hd, dtype=t.bfloat16)
    k0 = c.randn(bsz, sl, n_kh, hd, dtype=t.bfloat16)
    theta = c.randn(sl, hd // 2, scale=3.0)
    cos, sin = t.cos(theta), t.sin(theta)
    q, kk = q0.clone(), k0.clone()  # rotated in place

    def reset() -> None:
        q.copy_(q0)
        kk.copy_(k0)
    launch = lambda k: k._triton_rope[(bsz * sl,)](
        q, q.stride(1), kk, kk.stride(1), cos, cos.stride(0), sin, sin.stride(0), sl, bsz, n_qh, n_kh, hd,
        np2(n_qh), np2(n_kh), np2(hd), BACKWARD_PASS=False)

    def rope(x: Any) -> Any:
        x1, x2 = x.float()[..., : hd // 2], x.float()[..., hd // 2:]
        cs, sn = cos[None, :, None, :], sin[None, :, None, :]
        return t.cat([x1 * cs - x2 * sn, x2 * cs + x1 * sn], -1)
    return Run(launch, lambda: [q, kk], [rope(q0), rope(k0)], [BF16, BF16], 2 * (q.numel() + kk.numel()) * 2,
               f"{bsz}x{sl}x({n_qh}+{n_kh})x{hd}", "bf16", reset)


@case("liger_jsd", "liger/jsd", [(1024, 128256), (4096, 32000)], (1024, 32000), (3, 130))
def liger_jsd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (bt, v) = c.torch, size
    x = t.log_softmax(c.randn(bt, v), 1)
    y = t.log_softmax(c.randn(bt, v), 1)
    loss, dx = t.empty_like(x), t.empty_like(x)
    block, beta = min(64 if c.interpret else 65536, np2(v)), 0.5  # Liger: no num_warps given
    launch = lambda k: k._jsd_kernel[(bt,)](x, x.stride(0), y, y.stride(0), loss, loss.stride(0), dx, dx.stride(0),
                                            beta, bt, v, BLOCK_SIZE=block)
    q, p = x.exp(), y.exp()
    mix = beta * p + (1 - beta) * q
    ref_loss = (beta * p * y + (1 - beta) * q * x - mix * mix.log()) / bt
    ref_dx = (1 - beta) * q * (x - mix.log()) / bt
    tol = (1e-3, 1e-3 / (bt * v))  # the terms are about log(V) / V / BT
    return Run(launch, lambda: [loss, dx], [ref_loss, ref_dx], [tol, tol], 4 * bt * v * 4,
               f"{bt}x{v}", "fp32")


@case("liger_kl_div", "liger/kl_div", [(4096, 32000), (1024, 128256)], (2048, 32000), (4, 170))
def liger_kl_div(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (bt, v) = c.torch, size
    y = t.log_softmax(c.randn(bt, v), 1)
    target = t.softmax(c.randn(bt, v), 1)
    loss = c.empty(bt)
    block = min(64 if c.interpret else 16384, np2(v))  # Liger: min(65536 // 4, next_power_of_2(V))
    warps = 32 if block >= 32768 else 16 if block >= 8192 else 8 if block >= 2048 else 4
    launch = lambda k: k._kldiv_kernel_forward[(bt,)](y, y.stride(0), target, target.stride(0), loss, 1, v, 1e-10,
                                                      BLOCK_SIZE=block, log_target=False, reduction=1,
                                                      num_warps=warps)
    ref = (target * (target.clamp(min=1e-10).log() - y)).sum(1)
    return Run(launch, lambda: [loss], [ref], [(1e-3, 1e-4)], 2 * bt * v * 4, f"{bt}x{v}", "fp32")


@case("liger_dyt_fwd", "liger/dyt", [(4096, 4096), (16384, 8192)], (4096, 4096), (23, 70))
def liger_dyt_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x = c.randn(m, n, dtype=t.bfloat16, scale=3.0)
    alpha = t.full((1,), 0.7, device=c.dev, dtype=t.bfloat16)
    gamma, beta = c.randn(n, dtype=t.bfloat16), c.randn(n, dtype=t.bfloat16)
    y = t.empty_like(x)
    block, warps = liger_settings(n)
    launch = lambda k: k._dyt_fwd[(m,)](x, x.stride(0), alpha, gamma, beta, y, y.stride(0), n, BLOCK_SIZE=block,
                                        num_warps=warps)
    ref = gamma.float() * t.tanh((alpha * x).float()) + beta.float()
    return Run(launch, lambda: [y], [ref], [BF16], 2 * m * n * 2, f"{m}x{n}", "bf16")


@case("liger_group_norm_fwd", "liger/group_norm", [(32, 512, 1024, 64), (16, 256, 4096, 32)], (32, 512, 1024, 64),
      (2, 6, 37, 3))
def liger_group_norm_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (batch, ch, hw, groups) = c.torch, size
    x = c.randn(batch, ch, hw, shift=0.5)
    w, b = c.randn(ch), c.randn(ch)
    y, mean, rstd = t.empty_like(x), c.empty(batch, groups), c.empty(batch, groups)
    hidden = ch // groups * hw
    block = min(65536, np2(hidden))  # Liger: one program per (batch, group), no num_warps given
    launch = lambda k: k._group_norm_forward[(batch, groups)](
        y, ch * hw, hidden, x, ch * hw, hidden, mean, groups, 1, rstd, groups, 1, w, b, hidden, ch // groups, 1e-6,
        BLOCK_SIZE=block)
    var, mu = t.var_mean(x.view(batch, groups, -1), 2, correction=0)
    ref = t.nn.functional.group_norm(x, groups, w, b, 1e-6)
    return Run(launch, lambda: [y, mean, rstd], [ref, mu, t.rsqrt(var + 1e-6)], [(1e-3, 1e-3), F32, (1e-3, 0)],
               2 * x.numel() * 4, f"{batch}x{ch}x{hw} g{groups}", "fp32")


@case("liger_embedding_fwd", "liger/embedding", [(8192, 32000, 4096), (32768, 128256, 4096)], (8192, 32000, 4096),
      (53, 17, 40))
def liger_embedding_fwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (tokens, vocab, dim) = c.torch, size
    weight = c.randn(vocab, dim, dtype=t.bfloat16)
    ids = t.randint(0, vocab, (tokens,), device=c.dev)
    out = c.empty(tokens, dim, dtype=t.bfloat16)
    bm = bn = np2(min(128, dim))
    launch = lambda k: k._embedding_fwd[(cdiv(tokens, bm), cdiv(dim, bn))](weight, ids, out, tokens, dim,
                                                                           BLOCK_M=bm, BLOCK_N=bn)
    return Run(launch, lambda: [out], [weight[ids]], [EXACT], 2 * tokens * dim * 2 + tokens * 8,
               f"{tokens}x{dim} V={vocab}", "bf16")


# ---------------------------------------------------------------- FlagGems
# fg_argmax is left out: Triton refuses its helper get_dtype_min (a `return` inside a constexpr `if`, another
# after it: "Return type mismatch: fp32 and int32", seen with 3.6 compiling and 3.9's front end); tiles takes it.

@case("fg_cumsum", "flaggems/cumsum", [(4096, 4096, 1), (64, 4096, 256)], (4096, 4096, 1), (3, 77, 5))
def fg_cumsum(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n, k_) = c.torch, size
    x, out = c.randn(m, n, k_), c.empty(m, n, k_)
    block = 32 if c.interpret else min(1024, np2(n))
    launch = lambda k: k.scan_part_sum_kernel[(m, k_)](x, out, m, n, k_, BLOCK_SIZE=block)
    ref = t.cumsum(x.double(), 1)
    return Run(launch, lambda: [out], [ref], [(1e-4, 5e-3)], 2 * x.numel() * 4, f"{m}x{n}x{k_} dim=1", "fp32")


@case("fg_var_mean", "flaggems/var_mean_welford", [(4096, 4096), (1024, 65536)], (4096, 4096), (10, 203))
def fg_var_mean(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x = c.randn(m, n, scale=5.0, shift=3.0)
    var, mean = c.empty(m), c.empty(m)
    bm, bn, warps = (4, 32, 4) if c.interpret else (4, 1024, 8)  # one of FlagGems' tuned configs
    launch = lambda k: k.var_mean_welford_kernel[(cdiv(m, bm),)](x, var, mean, m, n, 1, BLOCK_M=bm, BLOCK_N=bn,
                                                                  num_warps=warps)
    ref_var, ref_mean = t.var_mean(x.double(), 1, correction=1)
    return Run(launch, lambda: [var, mean], [ref_var, ref_mean], [(1e-4, 1e-4), (1e-4, 1e-4)], m * n * 4,
               f"{m}x{n}", "fp32")


@case("fg_vector_norm_full", "flaggems/vector_norm", [(1 << 26,), (1 << 28,)], (1 << 24,), (1000,))
def fg_vector_norm_full(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (n,) = c.torch, size
    x, out = c.randn(n), c.empty(1)
    block = np2(math.ceil(math.sqrt(n)))  # FlagGems' two-stage reduction
    mid_size = cdiv(n, block)
    mid = c.empty(mid_size)

    def launch(k: Any) -> None:
        k._sumsq_partial[(mid_size,)](x, mid, n, BLOCK_SIZE=block)
        k._sumsq_final[(1,)](mid, out, mid_size, BLOCK_MID=np2(mid_size))
    return Run(launch, lambda: [out], [t.linalg.vector_norm(x.double())[None]], [(1e-5, 0)], n * 4, f"{n}",
               "fp32")


def softmax_tile_k(m: int, k: int, sms: int) -> int:
    """FlagGems' softmax_heur_tile_k: widen the K tile while there is more than one wave of programs."""
    tile, bound = 1, min(k, 8192)
    while m * cdiv(k, tile) / sms > 1 and tile * 2 <= bound:
        tile *= 2
    return tile


@case("fg_softmax_dim1", "flaggems/softmax_non_inner", [(32, 1024, 1024), (16, 128, 4096)], (16, 1024, 1024),
      (3, 50, 7))
def fg_softmax_dim1(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n, k_) = c.torch, size
    x = c.randn(m, n, k_, dtype=t.float16, scale=3.0)
    out = t.empty_like(x)
    tile_k = 4 if c.interpret else softmax_tile_k(m, k_, c.sm)
    tile_n = 16 if c.interpret else cdiv(8192, tile_k)
    warps = 4 if tile_n * tile_k < 2048 else 8 if tile_n * tile_k < 4096 else 16
    launch = lambda k: k._softmax_mid[(m, cdiv(k_, tile_k))](out, x, m, n, k_, TILE_N=tile_n, TILE_K=tile_k,
                                                             num_warps=warps)
    return Run(launch, lambda: [out], [t.softmax(x.float(), 1)], [(1e-2, 1e-3)], 2 * x.numel() * 2,
               f"{m}x{n}x{k_} dim=1", "fp16")


# ---------------------------------------------------------------- vLLM / SGLang

@case("vllm_fused_add_rms_norm", "vllm/fused_add_rms_norm", [(4096, 4096), (16384, 8192)], (4096, 4096), (7, 333))
def vllm_fused_add_rms_norm(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (m, n) = c.torch, size
    x0, r0 = c.randn(m, n, dtype=t.bfloat16), c.randn(m, n, dtype=t.bfloat16, scale=2.0)
    w = c.randn(n, dtype=t.bfloat16, scale=0.1, shift=1.0)
    x, r = x0.clone(), r0.clone()  # residual += x, x = rms_norm(residual) * w: both in place

    def reset() -> None:
        x.copy_(x0)
        r.copy_(r0)
    block = 128 if c.interpret else min(1024, np2(n))
    launch = lambda k: k._fused_add_rms_norm[(m,)](x, r, w, x.stride(0), r.stride(0), n, 1e-6, BLOCK=block)
    s = (x0.float() + r0.float()).bfloat16().float()
    ref = s * t.rsqrt(s.square().mean(1, keepdim=True) + 1e-6) * w.float()
    return Run(launch, lambda: [r, x], [s, ref], [EXACT, BF16], 4 * m * n * 2, f"{m}x{n}", "bf16", reset)


@case("vllm_group_quant_fp8", "vllm/per_token_group_quant_fp8", [(4096, 7168, 128), (16384, 7168, 128)],
      (4096, 7168, 128), (9, 96, 48))
def vllm_group_quant_fp8(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (tokens, hidden, group) = c.torch, size  # DeepSeek-V3 block scales: groups of 128 along the hidden dim
    y = c.randn(tokens, hidden, dtype=t.bfloat16, scale=4.0)
    q, scale = c.empty(tokens, hidden, dtype=t.float8_e4m3fn), c.empty(tokens, hidden // group)
    groups = tokens * hidden // group
    block = np2(group)  # vLLM: one group per program, num_warps by block size, one stage
    launch = lambda k: k._group_quant[(groups,)](y, q, scale, group, group, 1e-10, -448.0, 448.0, BLOCK=block,
                                                num_warps=min(max(block // 256, 1), 8), num_stages=1)
    yg = y.float().view(groups, group)
    s = yg.abs().amax(1).clamp(min=1e-10) / 448.0
    ref_q = (yg / s[:, None]).clamp(-448.0, 448.0).to(t.float8_e4m3fn).float().view(tokens, hidden)
    # a value may land on the fp8 neighbour (1/8 relative) where y / scale is near a rounding boundary
    return Run(launch, lambda: [q, scale], [ref_q, s.view(tokens, -1)], [(0.13, 2.0 ** -9), (1e-6, 0)],
               tokens * hidden * 3 + groups * 4, f"{tokens}x{hidden} g{group}", "bf16->fp8e4m3")


@case("vllm_reshape_and_cache", "vllm/reshape_and_cache", [(8192, 8, 128), (32768, 8, 128)], (8192, 8, 128),
      (9, 3, 20))
def vllm_reshape_and_cache(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (tokens, heads, dim) = c.torch, size
    page = 4 if c.interpret else 16
    blocks = cdiv(2 * tokens, page)
    key, value = c.randn(tokens, heads, dim, dtype=t.bfloat16), c.randn(tokens, heads, dim, dtype=t.bfloat16)
    slots = t.randperm(blocks * page, device=c.dev)[:tokens]
    slots[::7] = -1  # padding tokens: skipped
    kc, vc = c.empty(blocks, page, heads, dim, dtype=t.bfloat16), c.empty(blocks, page, heads, dim, dtype=t.bfloat16)
    one = t.ones(1, device=c.dev)
    width = heads * dim

    def reset() -> None:
        kc.zero_()
        vc.zero_()
    launch = lambda k: k._reshape_and_cache[(tokens,)](
        key, value, kc, vc, slots, one, one, width, width, page * width, width, page, HEAD_SIZE=dim,
        NUM_HEADS=heads, TILE=np2(width), FP8=False)
    live = slots >= 0
    refs = []
    for src in (key, value):
        ref = t.zeros(blocks * page, heads, dim, device=c.dev, dtype=t.bfloat16)
        ref[slots[live]] = src[live]
        refs.append(ref.view(kc.shape))
    return Run(launch, lambda: [kc, vc], refs, [EXACT, EXACT], 4 * tokens * width * 2 + tokens * 8,
               f"{tokens}x{heads}x{dim} page{page}", "bf16", reset)


# ---------------------------------------------------------------- flash-linear-attention, Mamba, Unsloth

@case("fla_l2norm_bwd", "fla/l2norm", [(262144, 128), (65536, 256)], (65536, 128), (9, 50))
def fla_l2norm_bwd(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (n_rows, d) = c.torch, size  # q or k of [B, T, H, D] seen as [B*T*H, D], one row per program
    x = c.randn(n_rows, d)
    rstd = t.rsqrt(x.square().sum(1) + 1e-6)
    y, dy = (x * rstd[:, None]).bfloat16(), c.randn(n_rows, d, dtype=t.bfloat16)
    dx = t.empty_like(dy)
    launch = lambda k: k.l2norm_bwd_kernel[(n_rows,)](y, rstd, dy, dx, N=d, BD=np2(d))
    yf, dyf, r = y.float(), dy.float(), rstd[:, None]
    ref = dyf * r - (dyf * yf).sum(1, keepdim=True) * yf * r
    return Run(launch, lambda: [dx], [ref], [BF16], 3 * y.numel() * 2, f"{n_rows}x{d}", "bf16")


@case("mamba_chunk_cumsum", "mamba/chunk_cumsum", [(8, 4096, 80, 256), (32, 8192, 128, 256)], (8, 4096, 80, 256),
      (2, 45, 5, 16))
def mamba_chunk_cumsum(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (batch, seqlen, heads, chunk) = c.torch, size
    nchunks = cdiv(seqlen, chunk)
    dt, a, bias = c.randn(batch, seqlen, heads, scale=3.0), -c.randn(heads).abs() - 0.5, c.randn(heads)
    dt_out, da = c.empty(batch, heads, nchunks, chunk), c.empty(batch, heads, nchunks, chunk)
    block_h = 4 if c.interpret else 16
    dt_min, dt_max = (0.01, 4.0) if c.interpret else (0.0, float("inf"))  # mamba2's default dt_limit
    launch = lambda k: k._chunk_cumsum[(batch, nchunks, cdiv(heads, block_h))](
        dt, a, bias, dt_out, da, seqlen, heads, chunk, dt_min, dt_max, *dt.stride(), dt_out.stride(0),
        dt_out.stride(1), dt_out.stride(2), HAS_BIAS=True, DT_SOFTPLUS=True, BLOCK_H=block_h, BLOCK_CHUNK=np2(chunk))
    v = dt + bias
    v = t.where(v <= 20, t.nn.functional.softplus(v), v).clamp(dt_min, dt_max)
    padded = t.zeros(batch, nchunks * chunk, heads, device=c.dev)
    padded[:, :seqlen] = v
    ref = padded.view(batch, nchunks, chunk, heads).permute(0, 3, 1, 2)
    ref_da = t.cumsum(ref * a[None, :, None, None], -1)
    return Run(launch, lambda: [dt_out, da], [ref, ref_da], [(1e-4, 1e-5), (1e-4, 1e-3)],
               dt.numel() * 4 + 2 * dt_out.numel() * 4, f"{batch}x{seqlen}x{heads} chunk{chunk}", "fp32")


@case("mamba_state_update", "mamba/selective_state_update", [(64, 80, 64, 128), (64, 1, 5120, 16)],
      (64, 80, 64, 128), (2, 4, 13, 10))
def mamba_state_update(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (batch, heads, dim, dstate) = c.torch, size
    state0 = c.randn(batch, heads, dim, dstate)
    x, dt, z = c.randn(batch, heads, dim), c.randn(batch, heads, dim, scale=2.0), c.randn(batch, heads, dim)
    a = -c.randn(heads, dim, dstate).abs() - 0.1
    b, cc = c.randn(batch, 1, dstate), c.randn(batch, 1, dstate)  # one group
    bias, skip = c.randn(heads, dim), c.randn(heads, dim)
    state, out = state0.clone(), t.empty_like(x)
    # mamba: (BLOCK_M, num_warps) by dstate
    block_m, warps = (32, 4) if dstate <= 16 else (16, 4) if dstate <= 32 else (8, 4) if dstate <= 64 else (4, 4)
    grid = lambda meta: (cdiv(dim, meta["BLOCK_M"]), batch, heads)
    launch = lambda k: k._ssm_step[grid](
        state, x, dt, bias, a, b, cc, skip, z, out, dim, dstate, heads, *state.stride()[:3], x.stride(0),
        x.stride(1), dt.stride(0), dt.stride(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0),
        out.stride(1), SOFTPLUS=True, BLOCK_M=block_m, num_warps=warps)
    d = dt + bias
    d = t.where(d <= 20, t.nn.functional.softplus(d), d)
    new = state0 * t.exp(a * d[..., None]) + b[:, :, None, :] * (x * d)[..., None]
    ref = ((new * cc[:, :, None, :]).sum(-1) + x * skip) * z * t.sigmoid(z)
    return Run(launch, lambda: [state, out], [new, ref], [(1e-4, 1e-5), (1e-3, 1e-4)],
               3 * state.numel() * 4, f"b{batch} h{heads} {dim}x{dstate}", "fp32", lambda: state.copy_(state0))


@case("unsloth_cross_entropy_softcap", "unsloth/cross_entropy_softcap", [(4096, 32000), (16384, 32000)], (4096, 32000),
      (6, 250))
def unsloth_cross_entropy_softcap(c: Ctx, size: tuple[int, ...]) -> Run:
    t, (bt, v) = c.torch, size
    logits = c.randn(bt, v, dtype=t.bfloat16, scale=20.0)
    labels = t.randint(0, v, (bt,), device=c.dev)
    labels[1::16] = -100
    loss, lse = c.empty(bt), c.empty(bt)
    block, warps = liger_settings(v)  # Unsloth's calculate_settings: the same rule
    launch = lambda k: k._cross_entropy_forward[(bt,)](
        logits, logits.stride(0), loss, lse, labels, v, BLOCK_SIZE=block, DO_SOFTCAPPING=True, SOFTCAP=30.0,
        DO_LOGIT_SCALING=False, LOGIT_SCALE=1.0, num_warps=warps)
    zz = 30.0 * t.tanh(logits.float() / 30.0)
    ref_lse = t.logsumexp(zz, 1)
    picked = zz.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    ref_loss = t.where(labels != -100, ref_lse - picked, 0.0)
    return Run(launch, lambda: [loss, lse], [ref_loss, ref_lse], [(1e-4, 1e-3), (1e-4, 1e-3)], bt * v * 2,
               f"{bt}x{v}", "bf16")


# ---------------------------------------------------------------- driver

# What Triton 3.9's own interpreter gets wrong in these kernels (each seen on its own, in a few lines):
# there --interpret checks tiles alone.  Compiled Triton is not concerned.
TRITON_INTERPRETER_LIMITS = {
    "liger_rms_norm_fwd": "libdevice.rsqrt is a stub returning None",
    "liger_geglu_tanh_fwd": "libdevice.tanh is a stub returning None",
    "liger_dyt_fwd": "libdevice.tanh is a stub returning None",
    "mamba_chunk_cumsum": "libdevice.log1p is a stub returning None",
    "unsloth_cross_entropy_softcap": "libdevice.tanh is a stub returning None",
    "liger_fused_add_rms_norm_fwd": "a float argument stays a Python float: eps.to(...) raises",
    "liger_swiglu_fwd": "bf16 * bf16 gives garbage",
    "vllm_fused_add_rms_norm": "fp32 -> bf16 truncates instead of rounding to nearest even",
    "vllm_group_quant_fp8": "fp32 -> float8e4nv misrounds (125.0 -> 64)",
    "mamba_state_update": "string annotations 'tl.constexpr' are not taken as constexpr",
}


def mismatch(torch: Any, got: list[Any], want: list[Any], tols: list[tuple[float, float]]) -> str | None:
    for i, (a, b, (rtol, atol)) in enumerate(zip(got, want, tols)):
        b = b.to(torch.float32)
        if a.shape != b.shape:
            return f"output {i}: shape {tuple(a.shape)}, expected {tuple(b.shape)}"
        ok = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not bool(ok.all()):
            err = (a - b).abs().nan_to_num(nan=float("inf")).flatten()
            at = int(err.argmax())
            return (f"output {i}: {int((~ok).sum())}/{ok.numel()} outside rtol={rtol:g} atol={atol:g}, "
                    f"max abs err {float(err[at]):.3g} at flat index {at} (got {float(a.flatten()[at]):.6g}, "
                    f"expected {float(b.flatten()[at]):.6g})")
    return None


def launch_and_check(torch: Any, run: Run, module: Any, sync: Callable[[], Any]) -> tuple[list[Any] | None, str]:
    """One launch on fresh inputs: (the outputs, "") if they match torch's, else (None, what is wrong)."""
    try:
        if run.reset is not None:
            run.reset()
        run.launch(module)
        sync()
        got = [o.detach().to(torch.float32, copy=True) for o in run.outputs()]
    except Exception as e:  # a compiler's message starts with the source: keep its start and its end
        text = str(e) + (f" [caused by] {str(e.__cause__)[-400:]}" if e.__cause__ is not None else "")
        return None, f"{type(e).__name__}: " + (text if len(text) < 900 else f"{text[:300]} [...] {text[-600:]}")
    bad = mismatch(torch, got, run.refs, run.tols)
    return (None, bad) if bad else (got, "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names (default: all)")
    ap.add_argument("--quick", action="store_true", help="one smaller size per case")
    ap.add_argument("--interpret", action="store_true", help="no GPU: tiny sizes, CPU tensors, both interpreters")
    ap.add_argument("--list", action="store_true", help="list the cases and their sizes, then exit")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warm-up, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    args = ap.parse_args()

    wanted = [w for w in args.cases.split(",") if w]
    selected = [cs for cs in CASES if not wanted or any(w in cs.name for w in wanted)]
    if args.list:
        for cs in selected:
            print(f"{cs.name:30s} {cs.module:34s} sizes={cs.sizes} quick={cs.quick} tiny={cs.tiny}")
        return
    if args.interpret:  # both are read at import time
        os.environ["TILES_INTERPRET"] = "1"
        os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(COMPAT))
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))

    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.")  # its interpreter's NumPy
    warnings.filterwarnings("ignore", message="Logical operators 'and' and 'or' are deprecated")
    import torch
    import triton
    from triton.testing import do_bench

    import tiles

    if not args.interpret and not torch.cuda.is_available():
        sys.exit("no CUDA device: run this on a GPU machine, or use --interpret")
    dev = torch.device("cpu" if args.interpret else "cuda")
    sm = 4 if args.interpret else torch.cuda.get_device_properties(dev).multi_processor_count
    ctx = Ctx(torch, dev, args.interpret, sm)
    sync = (lambda: None) if args.interpret else torch.cuda.synchronize
    tmp = Path(tempfile.mkdtemp(prefix="corpus_speed_"))
    modules: dict[str, dict[str, Any]] = {}
    table: list[tuple[str, str, str, float, float, int]] = []
    failed: list[str] = []
    passed = 0

    for cs in selected:
        if cs.module not in modules:
            try:
                modules[cs.module] = {f: load(cs.module, f, tmp) for f in ("triton", "tiles")}
            except Exception as e:  # a module that does not import in one flavour: its cases are skipped
                print(f"{cs.name}: FAILED, {cs.module} does not load: {type(e).__name__}: {e}", flush=True)
                failed.append(cs.name)
                continue
        for size in [cs.tiny] if args.interpret else [cs.quick] if args.quick else cs.sizes:
            torch.manual_seed(0)
            try:
                run = cs.make(ctx, size)
            except Exception as e:
                print(f"{cs.name} {size}: FAILED in setup: {type(e).__name__}: {e}", flush=True)
                failed.append(f"{cs.name} {size}")
                continue
            label = f"{cs.name} {run.shape} {run.dtype}"
            results, notes = {}, []
            for flavour in ("triton", "tiles"):
                got, bad = launch_and_check(torch, run, modules[cs.module][flavour], sync)
                limit = TRITON_INTERPRETER_LIMITS.get(cs.name) if args.interpret and flavour == "triton" else None
                if got is not None:
                    results[flavour] = got
                elif limit:
                    notes.append(f"Triton's interpreter not checked ({limit}; {bad.splitlines()[0][:160]})")
                else:
                    print(f"{label}: {flavour} FAILED: {bad}", flush=True)
                    failed.append(f"{label} ({flavour})")
            if len(results) == 2 and (differ := mismatch(torch, results["tiles"], results["triton"], run.tols)):
                notes.append(f"tiles and Triton differ, both within tolerance of torch: {differ}")
            ok = "tiles" in results and (len(results) == 2 or bool(notes))
            passed += ok
            times = {} if args.interpret else {
                f: do_bench(lambda: run.launch(modules[cs.module][f]), warmup=args.warmup, rep=args.rep,
                            return_mode="median") * 1e3 for f in results}
            t_tr, t_ti = times.get("triton", math.nan), times.get("tiles", math.nan)
            table.append((cs.name, run.shape, run.dtype, t_tr, t_ti, run.nbytes))
            result = ("ok" if ok else "FAILED") if args.interpret else \
                f"triton {t_tr:9.1f} us  tiles {t_ti:9.1f} us  ratio {t_tr / t_ti:5.2f}"
            print(f"{label}: {result}" + "".join(f"\n    note: {n}" for n in notes), flush=True)

    if args.interpret:
        print(f"\n{passed} of {len(table)} cases pass in --interpret" + (f"; FAILED: {', '.join(failed)}" if failed
                                                                         else ""))
        sys.exit(1 if failed else 0)
    print(f"\n# {torch.cuda.get_device_name()}  triton {triton.__version__}  tiles {tiles.__version__}  "
          f"torch {torch.__version__}")
    print(f"| {'case':30s} | {'shape':26s} | {'dtype':13s} | Triton us | tiles us | ratio | Triton GB/s | tiles GB/s |")
    print(f"|{'-' * 32}|{'-' * 28}|{'-' * 15}|----------:|---------:|------:|------------:|-----------:|")
    ratios = []
    for name, shape, dtype, t_tr, t_ti, nbytes in table:
        ratio = t_tr / t_ti
        if not math.isnan(ratio):
            ratios.append((ratio, f"{name} {shape}"))
        print(f"| {name:30s} | {shape:26s} | {dtype:13s} | {t_tr:9.1f} | {t_ti:8.1f} | {ratio:5.2f} | "
              f"{nbytes / t_tr / 1e3:11.0f} | {nbytes / t_ti / 1e3:10.0f} |")
    if ratios:
        geomean = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        print(f"\ngeometric mean of Triton time / tiles time over {len(ratios)} cases: {geomean:.3f}")
        slow = [f"{label} ({r:.2f})" for r, label in ratios if r < 0.9]
        print("below 0.9: " + (", ".join(slow) if slow else "none"))
    if failed:
        print("FAILED: " + ", ".join(failed))


if __name__ == "__main__":
    main()
