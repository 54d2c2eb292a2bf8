"""tiles kernels as torch custom ops (``tiles.integrations.torch``): eager, ``torch.library.opcheck``,
``torch.compile(fullgraph=True)``, and on a GPU CUDA-graph capture and ``mode="reduce-overhead"``.

On the CPU the ops run on the interpreter backend with CPU tensors; the CUDA tests skip without
a GPU.  Everything skips without torch."""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.errors import LaunchError

torch = pytest.importorskip("torch", reason="torch is not installed: the torch integration needs it")
from tiles.integrations.torch import capturing, custom_op  # noqa: E402

BLOCK = 128


@tiles.jit
def scale_add_kernel(x, y, out, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def _launch(x, y, alpha, out):
    backend = "interpreter" if x.device.type == "cpu" else "cuda"
    n = x.numel()
    scale_add_kernel[(-(-n // BLOCK),)](x, y, out, n, alpha, BLOCK=BLOCK, backend=backend)


@custom_op("tiles_tests::scale_add", mutates_args=(), fake=lambda x, y, alpha: torch.empty_like(x))
def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    _launch(x, y, alpha, out)
    return out


@custom_op("tiles_tests::scale_add_into", mutates_args=("out",))
def scale_add_into(x: torch.Tensor, y: torch.Tensor, alpha: float, out: torch.Tensor) -> None:
    _launch(x, y, alpha, out)


def _inputs(seed, n, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).to(device), torch.randn(n, generator=g).to(device)


def _close(got, want):
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)


# -- CPU: the interpreter backend on CPU tensors ------------------------------------------
def test_eager_call_runs_the_kernel():
    x, y = _inputs(1, 1000)  # 1000: the last program is masked
    _close(scale_add(x, y, 1.5), 1.5 * x + y)
    out = torch.full_like(x, float("nan"))
    scale_add_into(x, y, -0.25, out)
    _close(out, -0.25 * x + y)


def test_opcheck_accepts_the_registration():
    x, y = _inputs(2, 300)
    torch.library.opcheck(scale_add, (x, y, 0.5))
    torch.library.opcheck(scale_add_into, (x, y, 0.5, torch.empty_like(x)))


def test_compiles_fullgraph_without_running_the_kernel_while_tracing():
    def f(x, y):
        return torch.relu(scale_add(x, y, 2.0)) * 3.0 + scale_add(y, x, -1.0)

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for seed, n in ((3, 257), (4, 513)):
        x, y = _inputs(seed, n)
        _close(compiled(x, y), torch.relu(2.0 * x + y) * 3.0 + (-1.0 * y + x))


def test_compiled_in_place_op_writes_its_output():
    def f(x, y, out):
        scale_add_into(x, y, 0.75, out)
        return out * 2.0

    x, y = _inputs(5, 700)
    out = torch.zeros_like(x)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y, out)
    _close(out, 0.75 * x + y)
    _close(got, 2.0 * (0.75 * x + y))


@pytest.mark.slow  # torch.compile's default backend (inductor) compiles C++ on a CPU machine
def test_the_docs_example_runs(tmp_path):
    """docs/torch.md's example, as written (on the default backend: the interpreter on a CPU)."""
    import importlib.util
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "torch.md").read_text()
    path = tmp_path / "torch_md_example.py"  # a real file: the jit reads kernel source from it
    path.write_text(re.search(r"```python\n(.*?)```", text, re.S).group(1))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    device = "cuda" if tiles.backends.registry.default().name == "cuda" else "cpu"
    x, y = _inputs(16, 2049, device)
    _close(namespace["compiled"](x, y), torch.relu(2.0 * x + y))
    out = torch.empty_like(x)
    namespace["scale_add_into"](x, y, 0.5, out)
    _close(out, 0.5 * x + y)


def test_not_capturing_outside_a_graph():
    assert capturing() is False


# -- CUDA ----------------------------------------------------------------------------------
def _needs_cuda():
    from tiles.backends import registry
    ok, why = registry.status("cuda")
    if not (ok and torch.cuda.is_available()):
        pytest.skip(f"no CUDA GPU for tiles and torch: {why or 'torch.cuda.is_available() is False'}")


def test_cuda_compiled_with_inductor_fullgraph():
    _needs_cuda()

    def f(x, y):
        return torch.sigmoid(scale_add(x, y, 0.5)) + 1.0

    compiled = torch.compile(f, fullgraph=True)
    for seed, n in ((6, 4097), (7, 10_000)):
        x, y = _inputs(seed, n, "cuda")
        _close(compiled(x, y), torch.sigmoid(0.5 * x + y) + 1.0)


def test_cuda_graph_capture_replays_the_launch_on_new_inputs():
    _needs_cuda()
    n = 5000
    static_x, static_y = _inputs(8, n, "cuda")
    static_out = torch.empty_like(static_x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (compiles) off the capture, as torch's recipe does
        scale_add_into(static_x, static_y, 3.0, static_out)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    seen = {}
    with torch.cuda.graph(graph):
        seen["capturing"] = capturing()
        scale_add_into(static_x, static_y, 3.0, static_out)
        doubled = static_out * 2.0
    assert seen["capturing"] is True
    for seed in (9, 10):
        x, y = _inputs(seed, n, "cuda")
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        torch.cuda.synchronize()
        _close(static_out, 3.0 * x + y)
        _close(doubled, 2.0 * (3.0 * x + y))


def test_cuda_reduce_overhead_mode():
    _needs_cuda()

    def f(x, y):
        return scale_add(x, y, -2.0) * x

    compiled = torch.compile(f, fullgraph=True, mode="reduce-overhead")
    for seed in (11, 12, 13, 14):  # the third call on records a CUDA graph, later ones replay it
        x, y = _inputs(seed, 3000, "cuda")
        got = compiled(x, y).clone()
        torch.cuda.synchronize()
        _close(got, (-2.0 * x + y) * x)


def test_cuda_host_arrays_are_refused_while_capturing():
    _needs_cuda()
    xs = np.random.default_rng(15).standard_normal(256).astype(np.float32)
    out = np.zeros_like(xs)
    scale_add_kernel[(2,)](xs, xs, out, 256, 1.0, BLOCK=BLOCK, backend="cuda")  # compiled before capture
    np.testing.assert_allclose(out, 2 * xs, rtol=1e-6)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(LaunchError, match="capturing a CUDA graph"):
        with torch.cuda.graph(graph):
            scale_add_kernel[(2,)](xs, xs, out, 256, 1.0, BLOCK=BLOCK, backend="cuda")
