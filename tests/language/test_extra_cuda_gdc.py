"""``tl.extra.cuda.gdc_wait`` / ``gdc_launch_dependents`` (programmatic dependent launch) run
everywhere as no-ops: tiles never overlaps a launch with the one before it."""

import numpy as np

import tiles
import tiles.language as tl


@tiles.jit
def add_after_previous(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if USE_GDC:
        tl.extra.cuda.gdc_wait()
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(out_ptr + offs, x + y, mask=offs < n)


def test_gdc_controls_leave_results_unchanged(rng):
    n = 1000
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    for use in (True, False):
        out = np.full(n, np.nan, np.float32)
        add_after_previous[(tiles.cdiv(n, 128),)](x, y, out, n, BLOCK=128, USE_GDC=use, launch_pdl=use)
        np.testing.assert_array_equal(out, x + y)
