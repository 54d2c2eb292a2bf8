"""A whole script in the style of Triton's layer-norm tutorial, on torch CPU tensors: ``DEVICE``
from the driver, a ``torch.autograd.Function`` whose forward and backward are kernels, a test
against torch, ``do_bench`` with ``grad_to_none``, ``perf_report`` and a ``__main__`` block."""

import sys

import torch

import tiles as triton
import tiles.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def rms_fwd(X, Y, W, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


@triton.jit
def rms_bwd(DX, DY, DW_rows, X, W, Rstd, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.).to(tl.float32)
    rstd = tl.load(Rstd + row)
    xhat = x * rstd
    wdy = w * dy
    dx = (wdy - xhat * (tl.sum(xhat * wdy, axis=0) / N)) * rstd
    tl.store(DX + row * stride + cols, dx, mask=mask)
    tl.store(DW_rows + row * stride + cols, dy * xhat, mask=mask)


class RMSNorm(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, weight, eps):
        y = torch.empty_like(x)
        M, N = x.shape
        rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(N)
        rms_fwd[(M,)](x, y, weight, rstd, x.stride(0), N, eps, BLOCK_SIZE=block, num_warps=4, num_ctas=1)
        ctx.save_for_backward(x, weight, rstd)
        ctx.block = block
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, rstd = ctx.saved_tensors
        M, N = x.shape
        dx = torch.empty_like(x)
        dw_rows = torch.empty((M, N), dtype=torch.float32, device=x.device)
        rms_bwd[(M,)](dx, dy.contiguous(), dw_rows, x, w, rstd, x.stride(0), N, BLOCK_SIZE=ctx.block)
        return dx, dw_rows.sum(0).to(w.dtype), None


def check(M, N, eps=1e-6, device=DEVICE):
    x = torch.randn((M, N), device=device, requires_grad=True)
    w = torch.rand((N,), device=device, requires_grad=True)
    dy = torch.randn_like(x)
    y = RMSNorm.apply(x, w, eps)
    y.backward(dy)
    dx, dw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    ref.backward(dy)
    triton.testing.assert_close(y, ref, atol=1e-5, rtol=1e-5)
    triton.testing.assert_close(dx, x.grad, atol=1e-4, rtol=1e-4)
    triton.testing.assert_close(dw, w.grad, atol=1e-4, rtol=1e-4)


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["N"], x_vals=[100, 257], line_arg="provider", line_vals=["tiles", "torch"],
    line_names=["tiles", "Torch"], styles=[("blue", "-"), ("green", "-")], ylabel="ms",
    plot_name="rmsnorm-backward", args={"M": 16}))
def bench(M, N, provider):
    x = torch.randn((M, N), device=DEVICE, requires_grad=True)
    w = torch.rand((N,), device=DEVICE, requires_grad=True)
    if provider == "tiles":
        y = RMSNorm.apply(x, w, 1e-6)
    else:
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    dy = torch.randn_like(y)
    return triton.testing.do_bench(lambda: y.backward(dy, retain_graph=True), grad_to_none=[x, w],
                                   warmup=1, rep=5)


if __name__ == "__main__":
    torch.manual_seed(int(sys.argv[1]))
    assert DEVICE.type == "cpu" or triton.runtime.driver.active.get_current_target().backend == "cuda"
    check(37, 100)
    check(5, 1031)
    bench.run(print_data=True)
    print("ok")
