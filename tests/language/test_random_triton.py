"""tl.philox / randint / rand / randn and friends give Triton 3.9's streams.

Integer streams (randint4x, philox with 32- and 64-bit counters, int and tensor
seeds, int32 and int64 offsets, 10 and 7 rounds) and uniforms (rand, rand4x,
uint_to_uniform_float) are compared bit for bit.  Normals (randn, randn4x) go
through log/sqrt/sin/cos, whose last bits differ between math libraries
(Triton's interpreter uses NumPy's float32 routines, its GPU backends libdevice;
tiles' interpreter rounds float64 results): they must agree within NORMAL_ULPS.

Known answers: random_known_answers.py (made by random_reference.py under
Triton).  The live test runs random_reference.py under a Python that has Triton
(this one, $TILES_TRITON_PYTHON, or /tmp/tritonvenv) on fresh seeded inputs.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import random_reference as ref
from random_known_answers import KNOWN

import tiles

NORMAL_ULPS = 4
# floats_kernel's output: rand, randn, rand4x[0], rand4x[3], randn4x[1], randn4x[2], uint_to_uniform
NORMAL_ROWS = (1, 4, 5)


def assert_same_stream(name: str, want: list[int], got: list[int]) -> None:
    assert len(want) == len(got), name
    w, g = np.array(want, np.uint64), np.array(got, np.uint64)
    if not name.startswith("floats"):
        np.testing.assert_array_equal(g, w, err_msg=name)
        return
    rows_w, rows_g = w.reshape(-1, ref.N), g.reshape(-1, ref.N)
    for row, (rw, rg) in enumerate(zip(rows_w, rows_g)):
        if row not in NORMAL_ROWS:
            np.testing.assert_array_equal(rg, rw, err_msg=f"{name} row {row}")
            continue
        # same sign and within NORMAL_ULPS units in the last place
        iw, ig = rw.astype(np.uint32).view(np.int32), rg.astype(np.uint32).view(np.int32)
        assert np.all((iw < 0) == (ig < 0)), name
        ulps = np.abs(iw.astype(np.int64) - ig.astype(np.int64))
        assert ulps.max() <= NORMAL_ULPS, f"{name} row {row}: {ulps.max()} ulps apart"


def test_known_answers_from_triton():
    got = ref.outputs(ref.KNOWN_OFFSETS32, ref.KNOWN_OFFSETS64, ref.KNOWN_SEEDS)
    assert got.keys() == KNOWN.keys()
    for name, want in KNOWN.items():
        assert_same_stream(name, want, got[name])


def test_normals_are_close_but_not_constant():
    got = ref.outputs(ref.KNOWN_OFFSETS32, ref.KNOWN_OFFSETS64, [5])
    normals = np.array(got["floats seed=5 rounds=10 i32"], np.uint32).view(np.float32).reshape(-1, ref.N)
    assert np.all(np.isfinite(normals)) and len(np.unique(normals[1])) == ref.N


def _triton_python() -> str | None:
    if importlib.util.find_spec("triton") is not None:
        return sys.executable
    given = os.environ.get("TILES_TRITON_PYTHON")
    if given is not None:
        return given  # asked for: a broken one fails the test
    candidate = "/tmp/tritonvenv/bin/python"  # found by chance: used only if it can run the reference
    if not Path(candidate).exists():
        return None
    probe = subprocess.run([candidate, "-c", "import numpy, triton"], capture_output=True, timeout=120, check=False)
    return candidate if probe.returncode == 0 else None


@pytest.mark.backends("interpreter")  # runs Triton in a subprocess
def test_live_against_triton():
    python = _triton_python()
    if python is None:
        pytest.skip("no Python with Triton and NumPy (set TILES_TRITON_PYTHON)")
    rng = np.random.default_rng(20240612)
    offs32 = rng.integers(-(2**31), 2**31, ref.N).tolist()
    offs64 = rng.integers(-(2**63), 2**63 - 1, ref.N, dtype=np.int64).tolist()
    seeds = [int(rng.integers(0, 2**31)), int(rng.integers(2**32, 2**62)), -int(rng.integers(1, 2**31))]
    env = {**os.environ, "RANDOM_REFERENCE_IMPL": "triton", "TRITON_INTERPRET": "1"}
    text = ",".join
    run = subprocess.run(
        [python, str(Path(ref.__file__)), "--json", text(map(str, offs32)), text(map(str, offs64)),
         text(map(str, seeds))],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    want = json.loads(run.stdout)
    got = ref.outputs(offs32, offs64, seeds)
    assert want.keys() == got.keys()
    for name in want:
        assert_same_stream(name, want[name], got[name])


@pytest.mark.backends("opencl")
@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason="pyopencl is not installed")
def test_opencl_matches_triton_known_answers():
    try:
        tiles.set_backend("opencl")
    except Exception as e:  # no OpenCL platform
        pytest.skip(f"OpenCL backend unavailable: {e}")
    seed = ref.KNOWN_SEEDS[3]
    got = ref.outputs(ref.KNOWN_OFFSETS32, ref.KNOWN_OFFSETS64, [seed])
    for name, bits in got.items():
        assert_same_stream(name, KNOWN[name], bits)
