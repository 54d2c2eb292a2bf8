"""Kernels that reach for ``tl.inline_asm_elementwise`` (PTX ``tanh.approx.f32``, as fast GELU and
softcapping kernels do) behind a ``tl.constexpr`` switch: with the switch off the kernel runs on
every backend; with it on, tiles refuses at trace time with an error naming the kernel line and
the way out, instead of failing somewhere in a backend."""

import numpy as np
import pytest
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.core.errors import CompilationError


@tiles.jit
def _tanh_fast(x):
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                     pack=1)


@tiles.jit
def _tanh_portable(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@tiles.jit
def _gelu_tanh(x_ptr, y_ptr, n, USE_ASM: tl.constexpr = False, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    if USE_ASM:
        t = _tanh_fast(inner)
    else:
        t = _tanh_portable(inner)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


def check(rng):
    n = 300
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[:4] = [0.0, -0.0, 30.0, -30.0]
    y = np.empty_like(x)
    _gelu_tanh[(tiles.cdiv(n, 128),)](x, y, n)
    x64 = x.astype(np.float64)
    close(y, 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64 ** 3))), rtol=1e-5, atol=1e-6)
    with pytest.raises(CompilationError) as caught:
        _gelu_tanh[(tiles.cdiv(n, 128),)](x, y, n, USE_ASM=True)
    message = str(caught.value)
    assert "triton_language/inline_asm_fallback.py:17" in message, message
    assert "inline_asm_elementwise" in message and "tl ops" in message, message
