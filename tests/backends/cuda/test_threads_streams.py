"""CUDA on a GPU: launches from any thread (autograd's backward included), on the device that
holds the tensors, on the caller's stream; Ctrl-C while waiting.  Skips without CUDA or torch."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest
import stream_kernels as K

from tiles.backends import registry

GPU, WHY = registry.status("cuda")
torch = pytest.importorskip("torch", reason="these tests drive CUDA through torch tensors and streams")
pytestmark = pytest.mark.skipif(not (GPU and torch.cuda.is_available()),
                                reason=f"no CUDA GPU for tiles and torch: {WHY}")
BLOCK = 256


def _grid(n):
    return (-(-n // BLOCK),)


def _inputs(seed, n, device="cuda:0"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(n, generator=g).to(device), torch.randn(n, generator=g).to(device))


def scale_add(x, y, alpha, out=None, **launch):
    out = torch.empty_like(x) if out is None else out
    K.scale_add_kernel[_grid(x.numel())](x, y, out, x.numel(), alpha, BLOCK=BLOCK, backend="cuda", **launch)
    return out


def test_launch_from_a_second_thread():
    x, y = _inputs(1, 5000)
    scale_add(x, y, 2.0)  # the first thread uses CUDA first
    results = {}

    def worker():
        try:
            results["torch"] = scale_add(x, y, 3.0)
            xs, ys = x.cpu().numpy(), y.cpu().numpy()
            out = np.full_like(xs, np.nan)
            K.scale_add_kernel[_grid(xs.size)](xs, ys, out, xs.size, 3.0, BLOCK=BLOCK, backend="cuda")
            results["numpy"] = out
        except Exception as e:  # reported by the assertion below
            results["error"] = e

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert "error" not in results, results.get("error")
    want = (3.0 * x + y).cpu().numpy()
    torch.cuda.synchronize()
    np.testing.assert_allclose(results["torch"].cpu().numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results["numpy"], want, rtol=1e-6, atol=1e-6)


class ScaleAdd(torch.autograd.Function):
    """out = alpha * x + y with both passes as tiles kernels; backward runs on autograd's thread."""

    @staticmethod
    def forward(ctx, x, y, alpha):
        ctx.alpha = alpha
        ctx.forward_thread = threading.get_ident()
        return scale_add(x, y, alpha)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        ScaleAdd.backward_thread = threading.get_ident()
        grad_x = scale_add(grad, torch.zeros_like(grad), ctx.alpha)
        return grad_x, grad.clone(), None


def test_launch_inside_autograd_backward():
    x, y = _inputs(2, 3001)
    x.requires_grad_(True)
    y.requires_grad_(True)
    g = torch.randn(3001, generator=torch.Generator().manual_seed(3)).cuda()
    out = ScaleAdd.apply(x, y, 1.75)
    (out * g).sum().backward()
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.detach().cpu().numpy(), (1.75 * x + y).detach().cpu().numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), (1.75 * g).cpu().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y.grad.cpu().numpy(), g.cpu().numpy())


def _delayed_write_on(stream, target, source):
    """On ``stream``: spin the GPU for a while, then write ``3 * source`` into ``target``."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # tens of milliseconds of GPU cycles
        torch.mul(source, 3.0, out=target)


@pytest.mark.parametrize("how", ["current_stream", "stream_argument"])
def test_side_stream_ordering(how):
    """A torch op on a side stream writes the input; our kernel on that stream must see it
    without any host synchronization in between."""
    n = 1 << 20
    source, y = _inputs(4, n)
    x = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    _delayed_write_on(side, x, source)
    out = torch.empty_like(x)
    if how == "current_stream":
        with torch.cuda.stream(side):
            scale_add(x, y, 2.0, out=out)
    else:
        scale_add(x, y, 2.0, out=out, stream=side)
    side.synchronize()
    want = (2.0 * (3.0 * source) + y).cpu().numpy()
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("stream_kind", ["torch", "int"])
def test_results_on_a_non_default_stream(stream_kind):
    side = torch.cuda.Stream()
    stream = side if stream_kind == "torch" else side.cuda_stream
    x, y = _inputs(5, 4099)
    out = scale_add(x, y, -0.5, stream=stream)
    side.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), (-0.5 * x + y).cpu().numpy(), rtol=1e-6, atol=1e-6)
    rng = np.random.default_rng(6)  # host arrays: copies in and out on the same stream
    xs, ys = rng.standard_normal(777).astype(np.float32), rng.standard_normal(777).astype(np.float32)
    outs = np.full_like(xs, np.nan)
    K.scale_add_kernel[_grid(777)](xs, ys, outs, 777, 4.0, BLOCK=BLOCK, backend="cuda", stream=stream)
    np.testing.assert_allclose(outs, np.float32(4.0) * xs + ys, rtol=1e-6)


VIEWS = [(lambda a: a[1::3, 2::5], lambda a: a[3:25, 10:29]),
         (lambda a: a[:40, :30].T, lambda a: a[::-2, ::-4]),  # negative strides: CUDA takes them
         (lambda a: a[::-1, :20], lambda a: a[:64, 7:27])]


@pytest.mark.parametrize("case", range(len(VIEWS)))
def test_strided_numpy_views_on_cuda(case):
    rng = np.random.default_rng(7 + case)
    x_base = rng.standard_normal((64, 96)).astype(np.float32)
    y_base = rng.standard_normal((64, 96)).astype(np.float32)
    x_of, y_of = VIEWS[case]
    x, y = x_of(x_base), y_of(y_base)
    m, n = min(x.shape[0], y.shape[0]), min(x.shape[1], y.shape[1])
    want = y_base.copy()
    y_of(want)[:m, :n] += 2 * x[:m, :n]
    x, y = x[:m, :n], y[:m, :n]
    es = [s // 4 for s in (*x.strides, *y.strides)]
    K.affine2d_kernel[(1,)](x, y, m, n, *es, BM=64, BN=128, backend="cuda")
    np.testing.assert_allclose(y_base, want, rtol=1e-6)  # the view written, nothing else


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second GPU (cuda:1); this machine has one")
def test_tensors_on_device_1():
    x, y = _inputs(8, 10_001, device="cuda:1")
    assert torch.cuda.current_device() == 0
    out = scale_add(x, y, 1.25)
    torch.cuda.synchronize(1)
    np.testing.assert_allclose(out.cpu().numpy(), (1.25 * x + y).cpu().numpy(), rtol=1e-6, atol=1e-6)
    side = torch.cuda.Stream(device=1)
    out2 = scale_add(x, y, 0.5, stream=side)
    side.synchronize()
    np.testing.assert_allclose(out2.cpu().numpy(), (0.5 * x + y).cpu().numpy(), rtol=1e-6, atol=1e-6)
    with torch.cuda.device(1):  # host arrays run on torch's current device
        rng = np.random.default_rng(9)
        xs, ys = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
        outs = np.full_like(xs, np.nan)
        K.scale_add_kernel[_grid(300)](xs, ys, outs, 300, 2.0, BLOCK=BLOCK, backend="cuda")
    np.testing.assert_allclose(outs, np.float32(2.0) * xs + ys, rtol=1e-6)


def test_ctrl_c_interrupts_the_wait_for_a_long_kernel():
    rng = np.random.default_rng(10)
    x = rng.standard_normal(BLOCK).astype(np.float32)
    out = np.zeros_like(x)
    K.slow_copy_kernel[(1,)](x, out, BLOCK, 1000, BLOCK=BLOCK, backend="cuda")  # compile
    start = time.perf_counter()
    K.slow_copy_kernel[(1,)](x, out, BLOCK, 50_000_000, BLOCK=BLOCK, backend="cuda")
    per_round = max((time.perf_counter() - start) / 50_000_000, 1e-11)
    np.testing.assert_array_equal(out, x)
    rounds = int(min(4.0 / per_round, 2**31 - 1))  # about four seconds of kernel
    timer = threading.Timer(0.3, signal.pthread_kill, (threading.get_ident(), signal.SIGINT))
    began = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            K.slow_copy_kernel[(1,)](x, out, BLOCK, rounds, BLOCK=BLOCK, backend="cuda")
        waited = time.perf_counter() - began
    finally:
        timer.cancel()
        torch.cuda.synchronize()
    ran = time.perf_counter() - began
    assert ran > 2.0, f"the kernel ran only {ran:.2f} s: too short to tell an interrupted wait apart"
    assert waited < 1.5, f"Ctrl-C took {waited:.2f} s to interrupt a {ran:.1f} s kernel"
