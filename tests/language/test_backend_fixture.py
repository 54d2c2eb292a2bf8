"""The backend parametrization itself: ids, the interpreter always, refusals that must happen."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lang_backends import BACKENDS, SLOW_BACKENDS, backend_param

HERE = Path(__file__).resolve().parent

DECLARED = '''
import pytest
import tiles

@pytest.mark.backends("interpreter")
@pytest.mark.unsupported_on("interpreter", "float8 is refused")
def test_refused_as_declared(backend):
    raise tiles.UnsupportedError("float8 is refused here")

@pytest.mark.backends("interpreter")
@pytest.mark.unsupported_on("interpreter", "float8 is refused")
def test_runs_although_declared_unsupported(backend):
    pass

@pytest.mark.backends("interpreter")
@pytest.mark.unsupported_on("interpreter", "float8 is refused")
def test_refused_for_another_reason(backend):
    raise tiles.UnsupportedError("device_print is refused here")
'''


@pytest.mark.backends("interpreter")
def test_declared_refusals_pass_only_when_raised_for_the_declared_reason(tmp_path):
    for name in ("conftest.py", "lang_backends.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_declared.py").write_text(DECLARED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False, env=env)
    out = run.stdout + run.stderr
    assert "PASSED test_declared.py::test_refused_as_declared[interpreter]" in out, out
    assert "FAILED test_declared.py::test_runs_although_declared_unsupported[interpreter]" in out, out
    assert "FAILED test_declared.py::test_refused_for_another_reason[interpreter]" in out, out
    assert "not for the declared reason" in out


def test_the_interpreter_always_runs_in_the_quick_suite_and_ids_name_the_backend(request, backend):
    assert BACKENDS[0] == "interpreter" and "interpreter" not in SLOW_BACKENDS
    assert backend_param("interpreter").marks == []
    assert [m.name for m in backend_param("opencl").marks][:1] == ["slow"]
    assert request.node.name.endswith(f"[{backend}]")
