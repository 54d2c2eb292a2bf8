"""``@tiles.jit``'s keywords: Triton's no-effect ones are accepted by name, a misspelt one is refused."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


def _double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_triton_jit_hints_are_accepted_and_change_nothing(rng):
    hinted = tiles.jit(noinline=True, repr=lambda _: "k", launch_metadata=None, version=1,
                       do_not_specialize_on_alignment=["x_ptr"])(_double)
    x = rng.standard_normal(37).astype(np.float32)
    expected = x * 2
    hinted[(1,)](x, 37, BLOCK=64, backend="interpreter")
    np.testing.assert_array_equal(x, expected)


def test_unknown_jit_keyword_is_refused():
    with pytest.raises(TypeError, match="do_not_specialise"):
        tiles.jit(do_not_specialise=["n"])(_double)
