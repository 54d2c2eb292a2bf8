"""Two Triton-kernel libraries from the package registry, installed unmodified with
``pip install --no-deps`` (Liger-Kernel 0.8.5 and Apple's cut-cross-entropy 25.1.1: .ci/run
installs them with torch CPU, the ``as-triton`` extra, in a venv of their own), run through the
Triton compatibility mode against torch's own CPU ops.  Each library's public entry points are
called as its users call them; the kernels they launch are the library's.  The same calls gave
the same answers under Triton 3.9's interpreter (``TRITON_INTERPRET=1``, /work/tvenv), bit for
bit for Liger's cross entropy.

Skipped where torch or the libraries are not installed:
``pip install -e ".[as-triton]" && pip install --no-deps liger-kernel==0.8.5 cut-cross-entropy==25.1.1``.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

import tiles
from tiles.backends import registry

LIBRARIES = ("torch", "liger_kernel", "cut_cross_entropy")
missing = [name for name in LIBRARIES if importlib.util.find_spec(name) is None]
pytestmark = pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)} (see the docstring)")


def _backend(name: str) -> object:
    marks = [pytest.mark.slow] if name != "interpreter" else []
    ok, why = registry.status(name)
    if not ok:
        marks.append(pytest.mark.skip(reason=f"{name}: {why}"))
    return pytest.param(name, marks=marks, id=name)


@pytest.fixture(scope="module")
def torch():
    tiles.install_as_triton()
    try:
        yield importlib.import_module("torch")
    finally:
        tiles.uninstall_as_triton()


@pytest.fixture(params=[_backend("interpreter"), _backend("opencl")])
def backend(request, torch):
    tiles.set_backend(request.param)
    yield request.param
    tiles.set_backend(None)


def _inputs(torch, *shape, seed=0, dtype=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=dtype or torch.float32) * 2
    return x


def test_liger_swiglu_forward_backward(torch, backend):
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a, b = _inputs(torch, 3, 37, seed=1), _inputs(torch, 3, 37, seed=2)
    a[0, :3] = torch.tensor([0.0, -0.0, -30.0])
    a.requires_grad_(), b.requires_grad_()
    out = LigerSiLUMulFunction.apply(a, b)
    ra, rb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ref = torch.nn.functional.silu(ra) * rb
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    grad = _inputs(torch, 3, 37, seed=3)
    ref.backward(grad)
    (ga, gb) = torch.autograd.grad(out, (a, b), grad)
    torch.testing.assert_close(ga, ra.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gb, rb.grad, rtol=1e-5, atol=1e-6)


def test_liger_rms_norm(torch, backend):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    x, w = _inputs(torch, 5, 61, seed=4), _inputs(torch, 61, seed=5)
    out = LigerRMSNormFunction.apply(x, w, 1e-6)
    ref = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_liger_layer_norm_and_geglu(torch):
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    x, w, b = _inputs(torch, 4, 37, seed=6), _inputs(torch, 37, seed=7), _inputs(torch, 37, seed=8)
    out = LigerLayerNormFunction.apply(x, w, b, 1e-5)
    torch.testing.assert_close(out, torch.nn.functional.layer_norm(x, (37,), w, b, 1e-5), rtol=1e-5, atol=1e-5)
    g = LigerGELUMulFunction.apply(x, w.expand(4, 37).contiguous())
    torch.testing.assert_close(g, torch.nn.functional.gelu(x, approximate="tanh") * w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("vocab", [67, 128])
def test_liger_cross_entropy(torch, vocab):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    logits = _inputs(torch, 6, vocab, seed=vocab)
    target = torch.randint(0, vocab, (6,), generator=torch.Generator().manual_seed(9))
    target[2] = -100  # ignore_index
    ref = torch.nn.functional.cross_entropy(logits, target)  # first: Liger writes gradients into its input
    loss = LigerCrossEntropyFunction.apply(logits.clone(), target, None)[0]
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)


def test_cut_cross_entropy_forward(torch, backend):
    from cut_cross_entropy import linear_cross_entropy

    e, c = _inputs(torch, 19, 32, seed=10), _inputs(torch, 70, 32, seed=11)
    target = torch.randint(0, 70, (19,), generator=torch.Generator().manual_seed(12))
    loss = linear_cross_entropy(e, c, target)
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(e @ c.T, target), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # 23 s on the interpreter, 28 s on pocl (2-core VM)
def test_cut_cross_entropy_backward_bf16(torch, backend):
    """cce_backward.py:168-181 returns early from a run-time ``if`` (a filtered block), then makes
    d_accum bfloat16: the returning path ends the kernel, so nothing merges the two types."""
    from cut_cross_entropy import linear_cross_entropy

    e = _inputs(torch, 19, 32, seed=13).bfloat16().requires_grad_()
    c = _inputs(torch, 70, 32, seed=14).bfloat16().requires_grad_()
    target = torch.randint(0, 70, (19,), generator=torch.Generator().manual_seed(15))
    linear_cross_entropy(e, c, target).backward()
    re, rc = e.detach().float().requires_grad_(), c.detach().float().requires_grad_()
    torch.nn.functional.cross_entropy(re @ rc.T, target).backward()
    torch.testing.assert_close(e.grad.float(), re.grad, rtol=2e-2, atol=2e-3)
    torch.testing.assert_close(c.grad.float(), rc.grad, rtol=2e-2, atol=2e-3)
