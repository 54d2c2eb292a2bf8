"""tiles.testing against triton.testing (Triton 3.9): signatures and defaults, and assert_close's
verdicts.  The facts were recorded from Triton's CPU venv with `inspect`; when that venv is present
(/tmp/tritonvenv, or TILES_TRITON_PYTHON), the last two tests check the recorded facts against it.
(Triton's do_bench needs a GPU driver, so its behaviour is checked by test_testing.py's fake-clock
tests, written from Triton's source: 5 estimate calls, then max(1, int(budget / estimate)) calls.)"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path

import assert_close_cases
import pytest

from tiles import testing

R = "REQUIRED"
P = "POSITIONAL_OR_KEYWORD"
TRITON_PARAMETERS = {  # (name, kind, repr of the default), "self" left out
    "do_bench": [("fn", P, R), ("warmup", P, "25"), ("rep", P, "100"), ("grad_to_none", P, "None"),
                 ("quantiles", P, "None"), ("return_mode", P, "'mean'")],
    "do_bench_cudagraph": [("fn", P, R), ("rep", P, "20"), ("grad_to_none", P, "None"), ("quantiles", P, "None"),
                           ("return_mode", P, "'mean'")],
    "assert_close": [("x", P, R), ("y", P, R), ("atol", P, "None"), ("rtol", P, "None"), ("err_msg", P, "''")],
    "perf_report": [("benchmarks", P, R)],
    "Benchmark": [("x_names", P, R), ("x_vals", P, R), ("line_arg", P, R), ("line_vals", P, R),
                  ("line_names", P, R), ("plot_name", P, R), ("args", P, R), ("xlabel", P, "''"),
                  ("ylabel", P, "''"), ("x_log", P, "False"), ("y_log", P, "False"), ("styles", P, "None")],
    "Mark.run": [("show_plots", P, "False"), ("print_data", P, "False"), ("save_path", P, "''"),
                 ("return_df", P, "False"), ("kwargs", "VAR_KEYWORD", R)],
}
# where tiles differs on purpose: a parameter Triton does not have (after Triton's), or a default
# where Triton requires a value
TILES_EXTRA_PARAMETERS = {"do_bench": [("device", P, "None")]}
TILES_DEFAULTS_WHERE_TRITON_REQUIRES = {("Benchmark", "args"): "None"}

TRITON_ASSERT_CLOSE = {  # triton.testing.assert_close on assert_close_cases.CASES
    "nan_and_inf_within_atol": "pass", "beyond_the_default_atol": "fail", "rtol_is_relative_to_y": "fail",
    "rtol_within": "pass", "one_element_nan_vs_nan": "fail", "nan_vs_nan": "pass", "nan_vs_a_number": "fail",
    "inf_vs_minus_inf": "fail", "inf_vs_a_large_number": "fail", "minus_zero_vs_zero": "pass",
    "int64_beyond_2_53": "pass", "int32_off_by_one": "fail", "shapes_3_and_4": "fail", "shapes_3_and_1": "fail",
    "shapes_1_and_scalar": "pass", "shape_3_and_a_scalar": "pass", "shapes_2x3_and_3": "fail",
    "a_list_and_an_array": "pass", "atol_as_a_function": "pass", "rtol_as_a_function": "pass",
    "fp16_and_fp32": "pass", "bools": "fail",
}
TILES_ASSERT_CLOSE_DIFFERENCES = {  # documented in docs/porting-from-triton.md
    "one_element_nan_vs_nan": "pass",  # Triton's one-element path uses np.allclose, where NaN != NaN
    "int64_beyond_2_53": "fail",       # Triton compares integers as float64: 2**62 + 1 == 2**62 there
}

TRITON_PYTHON = Path(os.environ.get("TILES_TRITON_PYTHON", "/tmp/tritonvenv/bin/python"))


def _usable_triton_python() -> bool:
    """TILES_TRITON_PYTHON when set (a broken one then fails the tests); else the default venv, if it
    imports Triton and NumPy."""
    if "TILES_TRITON_PYTHON" in os.environ:
        return True
    if not TRITON_PYTHON.exists():
        return False
    probe = subprocess.run([str(TRITON_PYTHON), "-c", "import numpy, triton"], capture_output=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": ""}, check=False)
    return probe.returncode == 0


needs_triton = pytest.mark.skipif(not _usable_triton_python(),
                                  reason=f"no Triton venv with NumPy at {TRITON_PYTHON} (set TILES_TRITON_PYTHON)")


def parameters(fn):
    return [(p.name, p.kind.name, R if p.default is inspect.Parameter.empty else repr(p.default))
            for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def ours():
    return {"do_bench": testing.do_bench, "do_bench_cudagraph": testing.do_bench_cudagraph,
            "assert_close": testing.assert_close,
            "perf_report": testing.perf_report, "Benchmark": testing.Benchmark.__init__,
            "Mark.run": testing.Mark.run}


@pytest.mark.parametrize("name", sorted(TRITON_PARAMETERS))
def test_signatures_and_defaults_match_tritons(name):
    expected = [(param, kind, TILES_DEFAULTS_WHERE_TRITON_REQUIRES.get((name, param), default))
                for param, kind, default in TRITON_PARAMETERS[name]]
    expected += TILES_EXTRA_PARAMETERS.get(name, [])
    if expected and expected[-1][1] == "VAR_KEYWORD":  # **kwargs stays last
        expected.append(expected.pop(-1 - len(TILES_EXTRA_PARAMETERS.get(name, []))))
    assert parameters(ours()[name]) == expected


def test_assert_close_gives_tritons_verdicts_but_the_documented_ones():
    expected = {**TRITON_ASSERT_CLOSE, **TILES_ASSERT_CLOSE_DIFFERENCES}
    assert assert_close_cases.outcomes(testing.assert_close) == expected


def _run_triton(code: str) -> dict:
    proc = subprocess.run([str(TRITON_PYTHON), "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(assert_close_cases.__file__).parent,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_triton
def test_recorded_signatures_are_tritons():
    found = _run_triton(
        "import inspect, json\nimport triton.testing as tt\n"
        "def params(f):\n"
        "    return [(p.name, p.kind.name, 'REQUIRED' if p.default is inspect.Parameter.empty "
        "else repr(p.default)) for p in inspect.signature(f).parameters.values() if p.name != 'self']\n"
        "print(json.dumps({'version': __import__('triton').__version__, 'params': {n: params(f) for n, f in "
        "{'do_bench': tt.do_bench, 'do_bench_cudagraph': tt.do_bench_cudagraph, "
        "'assert_close': tt.assert_close, 'perf_report': tt.perf_report, "
        "'Benchmark': tt.Benchmark.__init__, 'Mark.run': tt.Mark.run}.items()}}))\n")
    assert found["version"].startswith("3.9")
    assert found["params"] == {k: [list(p) for p in v] for k, v in TRITON_PARAMETERS.items()}


@needs_triton
def test_recorded_assert_close_verdicts_are_tritons():
    found = _run_triton("import json, assert_close_cases\nfrom triton.testing import assert_close\n"
                        "print(json.dumps(assert_close_cases.outcomes(assert_close)))\n")
    assert found == TRITON_ASSERT_CLOSE
