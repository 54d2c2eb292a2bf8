"""Division on CUDA as Triton's: float32 ``/`` (and ``tl.fdiv`` without ``ieee_rounding``) is
``div.full.f32``, within the 2 ulp the backend declares in ``Target.approximate``; ``tl.math.div_rn``
and ``tl.fdiv(ieee_rounding=True)`` stay IEEE (``div.rn``), as does float64.  16-bit floats divide
in float32 (the tracer promotes them, as Triton does), so their ``/`` is ``div.full.f32`` too."""

import re

import numpy as np
import pytest
from test_cuda import needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import CodegenChoices, Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel
from tiles.core.ops import Op


@tiles.jit
def quotients(x_ptr, y_ptr, out_ptr, n, HOW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    if HOW == "operator":
        q = x / y
    elif HOW == "div_rn":
        q = tl.math.div_rn(x, y)
    elif HOW == "fdiv_ieee":
        q = tl.fdiv(x, y, ieee_rounding=True)
    else:
        q = tl.fdiv(x, y)
    tl.store(out_ptr + offs, q, mask=offs < n)


def divisions(how, dtype):
    x = np.ones(100, dtype)
    ir = quotients.warmup(x, x, x, 100, HOW=how, BLOCK=128, backend="interpreter").ir
    options = Options(4, 3, codegen=CodegenChoices.from_env())  # TILES_APPROX_DIV, as the jit reads it
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), options), "sm_90a")
    return sorted(set(re.findall(r"\bdiv\.\w+\.f\d+", ptx)))


@pytest.mark.parametrize("how,expected", [("operator", ["div.full.f32"]), ("fdiv", ["div.full.f32"]),
                                          ("div_rn", ["div.rn.f32"]), ("fdiv_ieee", ["div.rn.f32"])])
def test_float32_division_instructions(how, expected):
    assert divisions(how, np.float32) == expected


@pytest.mark.parametrize("dtype,expected", [(np.float64, ["div.rn.f64"]), (np.float16, ["div.full.f32"])])
def test_other_floats(dtype, expected):
    assert divisions("operator", dtype) == expected


def test_the_bound_is_declared():
    declared = {op: (r, a) for op, r, a in tiles.backends.registry.get("cuda").target().approximate}
    assert declared[Op.DIV] == (2 * 2.0 ** -23, 2.0 ** -126)


def edge_operands(rng):
    x = (rng.standard_normal(4096) * 10.0 ** rng.integers(-30, 30, 4096)).astype(np.float32)
    y = (rng.standard_normal(4096) * 10.0 ** rng.integers(-30, 30, 4096)).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3e38, 1.0, 2.0 ** 126, 2.0 ** 127],
                       np.float32)
    x[:121], y[:121] = np.repeat(special, 11), np.tile(special, 11)
    y[200:260] = np.float32(2.0 ** 127) * rng.uniform(1.0, 1.9, 60).astype(np.float32)  # huge divisors
    x[260:320] = np.float32(2.0 ** -120) * rng.uniform(1.0, 2.0, 60).astype(np.float32)  # tiny quotients
    return x, y


@needs_gpu
@pytest.mark.parametrize("how", ["operator", "div_rn"])
def test_quotients_on_the_gpu(rng, how):
    x, y = edge_operands(rng)
    out = np.empty_like(x)
    quotients[(4,)](x, y, out, x.size, HOW=how, BLOCK=1024, backend="cuda")
    with np.errstate(all="ignore"):
        want = x / y
    if how == "div_rn":
        np.testing.assert_array_equal(out, want)
    else:
        rtol, atol = 2 * 2.0 ** -23, 2.0 ** -126
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True)


def test_switched_off_every_division_is_ieee(monkeypatch):
    monkeypatch.setenv("TILES_APPROX_DIV", "0")
    assert divisions("operator", np.float32) == ["div.rn.f32"]
    assert not tiles.backends.registry.get("cuda").code_choices().approx_div  # in Options, so in both cache keys
