"""Whole scripts in the style of Triton's tutorials (ours, under tests/scripts/) run as programs
on the interpreter, as a user runs a tutorial after changing its imports."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def run_script(name, seed, tmp_path):
    env = dict(os.environ, TILES_INTERPRET="1", TILES_CACHE_DIR=str(tmp_path / "cache"), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("TILES_BACKEND", None)
    return subprocess.run([sys.executable, str(HERE / name), str(seed)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_numpy_script_runs_whole(rng, tmp_path):
    proc = run_script("numpy_tutorial_style.py", int(rng.integers(2**31)), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "saxpy:" in proc.stdout and "target=interpreter hip=False ok" in proc.stdout
    assert "tiles (GB/s)" in proc.stdout and "NumPy (GB/s)" in proc.stdout


@pytest.mark.slow  # torch import and autograd on the interpreter: about 20 s
def test_torch_autograd_script_runs_whole(rng, tmp_path):
    pytest.importorskip("torch")
    proc = run_script("torch_tutorial_style.py", int(rng.integers(2**31)), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "rmsnorm-backward:" in proc.stdout and proc.stdout.rstrip().endswith("ok")
