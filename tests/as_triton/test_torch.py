"""torch with the compatibility mode: torch must not take tiles for Triton.

``import liger_kernel`` calls ``torch.compiler.disable``; torch then asks whether Triton is
installed (``torch.utils._triton.has_triton_package``, cached) and, if so, imports
``triton.backends.compiler`` and treats ``JITFunction``\\ s as Triton kernels for dynamo and
inductor.  The mode answers "no Triton" for torch in either import order, dynamo runs a tiles
launch as ordinary (skipped) Python, and inductor generates C++ for CPU tensors: results equal
eager torch's.  Checked with torch 2.13.0 (CPU), the version the ``as-triton`` extra pins."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
ROOT = Path(__file__).parents[2]


def _python(code: str, where: Path) -> str:
    """Run ``code`` as a script (kernels need a file) in a fresh process; its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TILES_BACKEND": "interpreter"}
    script = where / "script.py"
    script.write_text(textwrap.dedent(code))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_torch_sees_no_triton(alias):
    import torch
    from torch.utils._triton import has_triton, has_triton_package

    assert not has_triton_package() and not has_triton()
    import triton  # still tiles for everyone else
    assert triton is alias and torch.compiler.disable(lambda: 1)() == 1


KERNEL = '''
import torch
import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)

def scale(x, s):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), s, BLOCK=64)
    return out

def f(x):
    return scale(torch.sin(x), 3.0).sum(-1) + x.cos().sum(-1)

x = torch.randn(7, 50)
'''


@pytest.mark.slow  # torch and dynamo's first compile: seconds
@pytest.mark.parametrize("order", ["torch first", "mode first"])
def test_torch_compile_around_a_tiles_kernel(order, tmp_path):
    first = "import torch\nimport tiles\ntiles.install_as_triton()\n" if order == "torch first" else \
        "import tiles\ntiles.install_as_triton()\nimport torch\n"
    out = _python(first + KERNEL + '''
from torch.utils._triton import has_triton_package
import liger_kernel  # noqa: F401  (its import calls torch.compiler.disable)
compiled = torch.compile(f, backend="eager")
torch.testing.assert_close(compiled(x), f(x))
print("ok", has_triton_package())
''', tmp_path)
    assert out.split() == ["ok", "False"]


@pytest.mark.slow  # inductor compiles C++ (tens of seconds)
def test_inductor_with_the_mode(tmp_path):
    out = _python('''
import tiles
tiles.install_as_triton()
''' + KERNEL + '''
g = torch.compile(lambda t: (t.sin() * 2 + t.exp()).sum(-1))
torch.testing.assert_close(g(x), (x.sin() * 2 + x.exp()).sum(-1))
compiled = torch.compile(f)
torch.testing.assert_close(compiled(x), f(x))
print("ok")
''', tmp_path)
    assert out.split() == ["ok"]
