"""The integer long-division fmod (lowering/fmod.py) against numpy's, bit for bit, on the simulator."""

import numpy as np
import pytest

from tiles.backends.cuda.simulator.simt import SimEmitter
from tiles.backends.lowering.fmod import exact_fmod
from tiles.core import dtypes as D

rng = np.random.default_rng(5)


def _fmod(x, y, dtype):
    sim = SimEmitter([], (0, 0, 0), (1, 1, 1), np.zeros(8, np.uint8))
    sim.threads = 1  # one element per run: the loops' trip counts are per element
    out = exact_fmod(sim, sim.constant(x, dtype), sim.constant(y, dtype), dtype)
    return out.v[0]


def _pairs(np_dtype, n, max_exp):
    fi = np.finfo(np_dtype)
    x = rng.standard_normal(n) * 2.0 ** rng.integers(-max_exp, max_exp, n)
    y = rng.standard_normal(n) * 2.0 ** rng.integers(-max_exp, max_exp, n)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.max), -float(fi.max), float(fi.tiny),
                float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 1.0, -3.0, 7.5]
    sx = [a for a in specials for _ in specials]
    sy = [b for _ in specials for b in specials]
    return (np.concatenate([x, sx]).astype(np_dtype), np.concatenate([y, sy]).astype(np_dtype))


@pytest.mark.parametrize("np_dtype,dtype,max_exp", [(np.float32, D.float32, 140), (np.float64, D.float64, 60)])
def test_exact_fmod_matches_numpy(np_dtype, dtype, max_exp):
    xs, ys = _pairs(np_dtype, 150, max_exp)
    with np.errstate(all="ignore"):
        want = np.fmod(xs, ys)
        got = np.array([_fmod(x, y, dtype) for x, y in zip(xs, ys)], np_dtype)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bits = np.uint64 if np_dtype == np.float64 else np.uint32
    bad = np.flatnonzero(got[~nan].view(bits) != want[~nan].view(bits))
    assert bad.size == 0, [(xs[~nan][i], ys[~nan][i], got[~nan][i], want[~nan][i]) for i in bad[:5]]
