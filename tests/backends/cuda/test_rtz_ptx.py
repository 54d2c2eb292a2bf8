"""``fp_downcast_rounding="rtz"`` on CUDA: each float downcast becomes PTX's ``cvt.rz`` (LLVM's
``fptrunc`` only rounds to nearest), which ptxas accepts for sm_80 and sm_90a.  The values are
checked on a GPU by tests/language/test_casts.py against the interpreter's ``floats.narrow``."""

import shutil
import subprocess

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel


@tiles.jit
def downcast(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(DST, fp_downcast_rounding="rtz"), mask=offs < n)


CASES = [(np.float32, tl.float16, ["cvt.rz.f16.f32"]), (np.float32, tl.bfloat16, ["cvt.rz.bf16.f32"]),
         (np.float64, tl.float32, ["cvt.rz.f32.f64"]), (np.float64, tl.float16, ["cvt.rz.f32.f64", "cvt.rz.f16.f32"]),
         (np.float64, tl.bfloat16, ["cvt.rz.f32.f64", "cvt.rz.bf16.f32"])]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("src,dst,cvts", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_rtz_downcast_is_cvt_rz(tmp_path, arch, src, dst, cvts):
    x, out = np.ones(100, src), np.ones(100, np.float32)
    ir = downcast.warmup(x, out, 100, DST=dst, BLOCK=128, backend="interpreter").ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target(arch), Options(4, 3)), arch)
    for cvt in cvts:
        assert cvt in ptx
    assert "cvt.rn" not in ptx.split(".entry")[1], "a nearest-even rounding crept in"
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not on PATH: the PTX was checked by text only")
    (tmp_path / "k.ptx").write_text(ptx)
    done = subprocess.run(["ptxas", f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_fp8_rtz_stays_refused():
    x, out = np.ones(100, np.float32), np.ones(100, np.uint8)
    ir = downcast.warmup(x, out, 100, DST=tl.float8e4nv, BLOCK=128, backend="interpreter").ir
    with pytest.raises(tiles.UnsupportedError, match="rtz"):
        lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 3))
