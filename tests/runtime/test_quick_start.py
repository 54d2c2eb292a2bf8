"""The quick start: each example takes --backend and says which backend ran; `tiles bench --backend`."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import pytest

from tiles import cli
from tiles.backends import registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = {  # sizes that keep the interpreter quick
    "01_vector_add.py": ["--n", "3001", "--block", "256"],
    "02_fused_softmax.py": ["--rows", "9", "--cols", "77"],
    "03_matmul.py": ["--m", "33", "--n", "17", "--k", "20"],
    "04_low_memory_dropout.py": ["--n", "999"],
    "05_layer_norm.py": ["--m", "7", "--n", "45"],
    "06_fused_attention.py": ["--z", "1", "--h", "1", "--n-ctx", "19", "--head-dim", "16"],
}
OPENCL_OK, OPENCL_WHY = registry.status("opencl")


def run_example(monkeypatch, name: str, *argv: str) -> dict:
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / name), *argv])
    return runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def compiled_on(module_globals: dict) -> set[str]:
    """Backend names of every compile of every @jit kernel the script defines."""
    from tiles.runtime.jit import JITFunction
    return {key[0] for value in module_globals.values() if isinstance(value, JITFunction)
            for key in value.cache}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("[0-9]*.py")) == sorted(SMALL)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_example_runs_on_the_backend_it_is_given_and_says_so(monkeypatch, capsys, name):
    monkeypatch.delenv("TILES_BACKEND", raising=False)
    found = run_example(monkeypatch, name, *SMALL[name], "--backend", "interpreter")
    out = capsys.readouterr().out
    assert ": ok" in out
    assert "ran on the interpreter backend (numpy), chosen with --backend." in out
    assert "Other backends (or set TILES_BACKEND=<name>):" in out and "--backend opencl" in out
    assert compiled_on(found) == {"interpreter"}


def test_auto_says_how_it_picked(monkeypatch, capsys):
    monkeypatch.delenv("TILES_BACKEND", raising=False)
    monkeypatch.delenv("TILES_INTERPRET", raising=False)
    registry.set_backend(None)
    run_example(monkeypatch, "01_vector_add.py", *SMALL["01_vector_add.py"])
    out = capsys.readouterr().out
    used = registry.default().name
    assert f"ran on the {used} backend" in out
    why = ("picked automatically: no GPU backend is available here" if used == "interpreter"
           else "picked automatically: the first available GPU backend")
    assert why in out


def test_the_readme_shows_what_the_main_command_prints(monkeypatch, capsys):
    readme = (EXAMPLES.parent / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start"):]
    assert "python examples/01_vector_add.py\n" in quick_start.split("```")[1]
    shown = quick_start.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    monkeypatch.delenv("TILES_BACKEND", raising=False)
    monkeypatch.delenv("TILES_INTERPRET", raising=False)
    registry.set_backend(None)
    if registry.default().name != "interpreter":
        pytest.skip("the README shows a machine without a GPU backend; this one has one")
    run_example(monkeypatch, "01_vector_add.py")
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == shown[:3]
    assert [line.split()[:2] for line in printed[3:]] == [line.split()[:2] for line in shown[3:]]
    assert all(line.split()[2] in ("available", "unavailable:") for line in printed[3:] + shown[3:])


@pytest.mark.parametrize("argv, message", [
    (["--backend", "nope"], "unknown backend 'nope'; choose one of auto, interpreter"),
    (["--backend", "cuda"], "the cuda backend is not available here"),
])
def test_a_backend_that_cannot_run_is_a_usage_error(monkeypatch, capsys, argv, message):
    if argv[1] == "cuda" and registry.status("cuda")[0]:
        pytest.skip("CUDA is available here, so --backend cuda is not an error")
    with pytest.raises(SystemExit) as info:
        run_example(monkeypatch, "01_vector_add.py", *argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.skipif(not OPENCL_OK, reason=f"OpenCL backend unavailable: {OPENCL_WHY}")
def test_an_example_on_opencl(monkeypatch, capsys):
    found = run_example(monkeypatch, "01_vector_add.py", "--n", "1000", "--backend", "opencl")
    assert "ran on the opencl backend (" in capsys.readouterr().out
    assert compiled_on(found) == {"opencl"}


BENCH_SCRIPT = """
import sys
import numpy as np
import tiles, tiles.language as tl

@tiles.jit
def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))

if __name__ == "__main__":
    x = np.random.default_rng(7).standard_normal(16).astype(np.float32)
    y = np.empty_like(x)
    copy[(1,)](x, y, BLOCK=16)
    assert (y == x).all()
    print("script args", sys.argv[1:], "compiled for", sorted({k[0] for k in copy.cache}))
"""


@pytest.mark.parametrize("where", ["after", "before", "equals"])
def test_bench_runs_the_script_on_the_backend_it_is_given(capsys, monkeypatch, tmp_path, where):
    if not OPENCL_OK:
        pytest.skip(f"OpenCL backend unavailable: {OPENCL_WHY}")
    monkeypatch.setenv("TILES_BACKEND", "interpreter")
    script = tmp_path / "bench_copy.py"
    script.write_text(BENCH_SCRIPT)
    argv = {"after": ["bench", str(script), "--rows", "3", "--backend", "opencl", "--", "--backend", "x"],
            "before": ["bench", "--backend", "opencl", str(script), "--rows", "3", "--", "--backend", "x"],
            "equals": ["bench", str(script), "--backend=opencl", "--rows", "3", "--", "--backend", "x"]}[where]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "script args ['--rows', '3', '--backend', 'x'] compiled for ['opencl']" in captured.out
    assert "tiles bench: bench_copy.py runs on the opencl backend" in captured.err
    assert os.environ["TILES_BACKEND"] == "interpreter"  # restored afterwards
    assert registry.default().name == "interpreter"


def test_bench_refuses_a_backend_that_cannot_run(capsys, tmp_path):
    script = tmp_path / "bench_copy.py"
    script.write_text(BENCH_SCRIPT)
    assert cli.main(["bench", str(script), "--backend", "nope"]) == 1
    assert "unknown backend 'nope'" in capsys.readouterr().err
