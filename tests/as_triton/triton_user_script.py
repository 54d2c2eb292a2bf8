"""A program written for Triton: ``python -m tiles.run triton_user_script.py ROWS COLS`` runs it on
tiles unchanged.  It prints one line, ``softmax ok <rows>x<cols> on <backend>``, or fails."""

import sys

import numpy as np
import triton
from triton.runtime import driver
from triton_user_kernels import softmax

if __name__ == "__main__":
    rows, cols = (int(a) for a in sys.argv[1:3])
    x = np.random.default_rng(rows).normal(0, 4, (rows, cols)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(softmax(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert triton.__version__.startswith("3.")
    print(f"softmax ok {rows}x{cols} on {driver.active.get_current_target().backend}")
