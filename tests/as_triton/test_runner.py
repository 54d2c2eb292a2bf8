"""The two switches that need no code change: ``python -m tiles.run`` (a script, or ``-m`` a
module, ``pytest`` included) and ``TILES_AS_TRITON=1`` for a pytest run (the ``pytest11`` entry
point ``tiles_as_triton``, or ``-p tiles_as_triton_pytest`` where the entry point is not installed)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               "TILES_BACKEND": "interpreter", **env}
    environ.pop("TILES_AS_TRITON", None) if "TILES_AS_TRITON" not in env else None
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=300)


def test_run_a_script(tmp_path):
    done = _run(["-m", "tiles.run", str(HERE / "triton_user_script.py"), "13", "77"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "softmax ok 13x77 on interpreter"


def test_run_a_module():
    done = _run(["-m", "tiles.run", "-m", "triton_user_script", "5", "3"], HERE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "softmax ok 5x3 on interpreter"


def test_without_the_mode_there_is_no_triton(tmp_path):
    done = _run([str(HERE / "triton_user_script.py"), "2", "2"], tmp_path)
    if "ModuleNotFoundError: No module named 'triton'" not in done.stderr:
        pytest.skip("a real Triton is installed here")
    assert done.returncode != 0


def test_run_usage():
    done = _run(["-m", "tiles.run"], HERE)
    assert done.returncode == 2 and "usage: python -m tiles.run" in done.stderr


SUITE = '''
import numpy as np
import pytest
import triton
import triton.language as tl


@triton.jit
def neg_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("n", [1, 100, 129])
def test_neg(n):
    x = np.arange(n, dtype=np.float32) - 7.5
    neg_kernel[(triton.cdiv(n, 64),)](x, n, BLOCK=64)
    np.testing.assert_array_equal(x, 7.5 - np.arange(n, dtype=np.float32))
'''


def _entry_point_installed() -> bool:
    return any(e.name == "tiles_as_triton" for e in importlib.metadata.entry_points(group="pytest11"))


@pytest.mark.slow  # two Python processes, each importing tiles and pytest (several seconds)
@pytest.mark.parametrize("how", ["env", "tiles.run"])
def test_a_library_test_suite(tmp_path, how):
    (tmp_path / "test_lib.py").write_text(textwrap.dedent(SUITE))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    base = ["-m", "pytest", "-p", "no:cacheprovider", "test_lib.py"]
    if how == "env":
        plugin = [] if _entry_point_installed() else ["-p", "tiles_as_triton_pytest"]
        done = _run([*base[:2], *plugin, *base[2:]], tmp_path, TILES_AS_TRITON="1")
        assert "Triton compatibility mode" in done.stdout
    else:
        done = _run(["-m", "tiles.run", *base], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
