"""``tl.device_print`` on CUDA (``backends/cuda/print_ops.py``): PTX that calls ``vprintf``, checked
by ptxas without a GPU, and the printed lines on a GPU."""

import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
from test_cuda import needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel


@tiles.jit
def print_many(i_ptr, h_ptr, b_ptr, d_ptr, u_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.device_print("ints", tl.load(i_ptr + offs, mask=mask, other=-7))
    tl.device_print("halves 50% \"q\"", tl.load(h_ptr + offs, mask=mask, other=0.0))
    tl.device_print("mixed", tl.load(b_ptr + offs, mask=mask, other=0.0), tl.load(d_ptr + offs, mask=mask))
    tl.device_print("bytes", tl.load(u_ptr + offs, mask=mask) > 100)
    tl.device_print("scalar", n)
    for k in range(2):
        tl.device_print("step", k)


def _arrays(rng, n):
    return (rng.integers(-1000, 1000, n).astype(np.int32), rng.standard_normal(n).astype(np.float16),
            rng.standard_normal(n).astype(ml_dtypes.bfloat16), rng.standard_normal(n),
            rng.integers(0, 256, n).astype(np.uint8))


def test_print_lowers_to_vprintf_that_ptxas_accepts(rng, tmp_path):
    args = _arrays(rng, 10)
    ir = print_many.warmup(*args, 10, BLOCK=4, backend="interpreter").ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 3)), "sm_90a")
    assert ptx.count("call.uni") + ptx.count("call ") >= 6 and "vprintf" in ptx
    formats = re.findall(r"tiles_fmt\d+\[\d+\] = \{([^}]*)\}", ptx)
    texts = {bytes(int(b) for b in f.split(",")).rstrip(b"\0").decode() for f in formats}
    assert "pid (%d, %d, %d) halves 50%% \"q\" %f\n" in texts
    assert "pid (%d, %d, %d) mixed %f %f\n" in texts and "pid (%d, %d, %d) step %d\n" in texts
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not on PATH: the PTX was checked by text only")
    (tmp_path / "k.ptx").write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_gpu
def test_each_owner_prints_its_values(rng, capfd):
    n = 10
    ints, halves, bf, doubles, raw = _arrays(rng, n)
    print_many[(3,)](ints, halves, bf, doubles, raw, n, BLOCK=4, backend="cuda")
    lines = set(capfd.readouterr().out.splitlines())
    for i in range(12):
        pid, inside = i // 4, i < n
        assert f"pid ({pid}, 0, 0) ints {ints[i] if inside else -7}" in lines
        assert f"pid ({pid}, 0, 0) halves 50% \"q\" {float(halves[i]) if inside else 0.0:f}" in lines
        if inside:
            assert f"pid ({pid}, 0, 0) mixed {float(bf[i]):f} {doubles[i]:f}" in lines
            assert f"pid ({pid}, 0, 0) bytes {int(raw[i] > 100)}" in lines
    for pid in range(3):
        assert f"pid ({pid}, 0, 0) scalar {n}" in lines
        assert {f"pid ({pid}, 0, 0) step {k}" for k in range(2)} <= lines
