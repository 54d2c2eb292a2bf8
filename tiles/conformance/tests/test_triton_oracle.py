"""``--oracle triton``: the translation of a case to a Triton program, the three-way verdict, the
known divergences, the report, and the refusal without Triton (these run without Triton); then a
few cases and generated programs on Triton's interpreter (skipped where Triton is not importable).

The expectations of the Triton tests were checked with Triton 3.9 and torch 2.13 (CPU) in
/work/tvenv: ``PYTHONPATH=. /work/tvenv/bin/python -m pytest conformance/tests/test_triton_oracle.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tiles.conformance import oracle, suite, triton_oracle
from tiles.conformance.compare import EXACT, compare
from tiles.conformance.corpus.elementwise import binary_kernel
from tiles.conformance.generate.program import Input, Node, Program, Stmt
from tiles.conformance.profiles import CI
from tiles.conformance.report import Report
from tiles.conformance.reproducer import inline_source
from tiles.conformance.runner import Outcome
from tiles.conformance.triton_divergences import KNOWN, Evidence, explain
from tiles.core import dtypes as D

TRITON = triton_oracle.unavailable_reason() is None
needs_triton = pytest.mark.skipif(not TRITON, reason="Triton and torch are not importable here (they live in "
                                                     "/work/tvenv; CI has neither)")


def _program() -> Program:
    x = Input("in0", D.int32, masked=True, other="7")
    p = Program([x], m=4, n=8, programs=3)
    p.stmts.append(Stmt(Node("v1", D.int32, "MN"), ["v1 = (in0 * 3) ^ (in0 >> 1)"], ("in0",)))
    p.output = Node("v1", D.int32, "MN")
    return p


# ---------------------------------------------------------------- translation (text)


def test_generated_program_runs_as_the_same_text_under_a_triton_header():
    tiles_text = _program().module_source()
    triton_text = triton_oracle.triton_module_source(tiles_text)
    header, body = triton_text.split("\n\n\n", 1)
    assert header.splitlines() == ["import triton as tiles  # noqa: F401",
                                   "import triton.language as tl  # noqa: F401"]
    assert body == _program().source()  # the kernel itself is not touched
    assert "@tiles.jit" in body and "import tiles" not in triton_text


def test_curated_kernel_text_and_module_imports_are_rebound():
    text = inline_source(binary_kernel)
    translated = triton_oracle.triton_module_source(text)
    assert translated.endswith(text) and "tl.umulhi(x, y)" in translated
    with_import = "import tiles.language.extra.libdevice as libdevice\n\n" + text
    assert "import triton.language.extra.libdevice as libdevice\n" in triton_oracle.triton_module_source(with_import)
    assert "tiles.language" not in triton_oracle.triton_module_source(with_import).split("\n\n\n", 1)[1] \
        .split("@tiles.jit")[0]


def test_dtype_constexprs_become_triton_dtypes_and_other_values_stay():
    assert triton_oracle.constexpr_value("add") == "add" and triton_oracle.constexpr_value(16) == 16
    if TRITON:
        import triton.language as tl
        assert triton_oracle.constexpr_value(D.bfloat16) is tl.bfloat16


# ---------------------------------------------------------------- refusal without Triton


def test_oracle_option_refuses_clearly_without_triton(monkeypatch, capsys):
    from tiles.conformance.__main__ import main
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` raises ImportError
    assert main(["--oracle", "triton", "--family", "integer", "--no-generated"]) == 2
    err = capsys.readouterr().err
    assert "--oracle triton needs Triton and torch importable" in err and sys.executable in err
    with pytest.raises(triton_oracle.OracleUnavailable, match="needs Triton"):
        suite.run("interpreter", CI, {"integer"}, generated=False, oracle="triton")


def test_unknown_oracle_is_refused():
    with pytest.raises(triton_oracle.OracleUnavailable, match="unknown oracle 'cuda'"):
        triton_oracle.check_available("cuda")


# ---------------------------------------------------------------- verdicts (Triton stubbed)


def _compare(a, b):
    m = compare(np.asarray(a[0]), np.asarray(b[0]), EXACT)
    return "" if m is None else f"output 'out': {m}"


def _verdict(monkeypatch, triton_result, got=None, evidence=None):
    def fake_run(text, grid, args, constexprs, folder, name="kernel"):
        if isinstance(triton_result, Exception):
            raise triton_result
        return [triton_result]
    monkeypatch.setattr(triton_oracle, "run", fake_run)
    ref = [np.array([1, 2, -3], np.int32)]
    return oracle.verdict("", (1,), ref, {}, ref, got, "opencl", _compare, evidence or Evidence("x/y"), Path("."))


def test_verdict_agrees_differs_and_names_who_stands_alone(monkeypatch):
    same, other = np.array([1, 2, -3], np.int32), np.array([1, 2, 3], np.int32)
    assert _verdict(monkeypatch, same)[0] == oracle.AGREES
    status, message, _ = _verdict(monkeypatch, other)
    assert status == oracle.DIFFERS and "interpreter vs Triton" in message and "at (2,)" in message
    status, message, _ = _verdict(monkeypatch, other, got=[other.copy()])
    assert status == oracle.DIFFERS and "opencl agrees with Triton: the interpreter stands alone" in message
    status, message, _ = _verdict(monkeypatch, same, got=[other.copy()])
    assert "Triton vs opencl" in message and "the interpreter agrees with Triton: opencl stands alone" in message
    status, message, _ = _verdict(monkeypatch, other, got=[same.copy()])
    assert "the interpreter and opencl agree: Triton stands alone" in message
    status, message, _ = _verdict(monkeypatch, other, got=[np.array([0, 0, 0], np.int32)])
    assert "the interpreter, Triton and opencl all differ" in message


def test_a_triton_error_is_a_disagreement_unless_a_known_divergence_explains_it(monkeypatch):
    status, message, _ = _verdict(monkeypatch, ValueError("Cannot perform a binary operation between an "
                                                          "unsigned tensor and a negative scalar."))
    assert status == oracle.DIFFERS and message.startswith("Triton raised")
    status, message, _ = _verdict(monkeypatch, ValueError("Expected dtype ['fp32', 'fp64'] but got fp16"))
    assert status == oracle.KNOWN and message.startswith("extension-math-on-16-bit-floats:")


def test_known_divergences_match_only_their_evidence():
    narrow = Evidence("elementwise/add", {"load:bfloat16", "add:bfloat16", "store:bfloat16"})
    assert explain(narrow).name == "interpreter-narrow-float-bits"
    assert explain(Evidence("memory/copy", {"load:float8e5", "store:float8e5"})).name == "interpreter-narrow-float-bits"
    assert explain(Evidence("x", {"add:float32"}, mismatch="output differs")) is None
    nan_sort = Evidence("generated_float/program", {"sort:float16"}, inputs=[np.array([1.0, np.nan], np.float16)])
    assert explain(nan_sort).name == "undefined-sort-with-nan"
    plain_sort = Evidence("generated_float/program", {"sort:float16"}, inputs=[np.array([1.0, 2.0], np.float16)])
    assert explain(plain_sort) is None
    overflow = Evidence("generated_float/program", {"cast.float16:int32"}, inputs=[np.array([np.inf], np.float16)])
    assert explain(overflow).name == "undefined-float-to-int-out-of-range"
    assert explain(Evidence("generated_float/program", {"cast.float16:int32"},
                            inputs=[np.array([2.5], np.float16)])) is None
    for d in KNOWN:  # every entry says why and how to see it
        assert d.kind in ("interpreter", "undefined", "extension") and len(d.reason) > 80
        assert "def kernel(" in d.reproducer.kernel and d.reproducer.args()


def test_report_adds_oracle_columns_and_fails_on_an_unexplained_disagreement():
    report = Report("interpreter", "ci", oracle="triton: Triton's interpreter (TRITON_INTERPRET=1)")
    report.add(Outcome("casts", "a", "passed", oracle=oracle.AGREES))
    report.add(Outcome("casts", "b", "passed", oracle=oracle.KNOWN, oracle_message="interpreter-narrow-float-bits: x"))
    assert report.ok and "triton differs" in report.table() and "interpreter-narrow-float-bits x1" in \
        report.oracle_details()
    report.add(Outcome("casts", "c", "passed", oracle=oracle.DIFFERS, oracle_message="interpreter vs Triton: ..."))
    assert not report.ok and "DIFFERS     casts/c" in report.oracle_details()
    assert report.to_json()["oracle_totals"] == {"agrees": 1, "differs": 1, "known": 1, "not run": 0}
    assert report.replay_command().endswith("--oracle triton")


# ---------------------------------------------------------------- on Triton


@needs_triton
def test_curated_cases_agree_with_triton():
    report = suite.run("interpreter", CI, {"elementwise"}, "[float32xfloat32]", generated=False, oracle="triton")
    verdicts = {o.id: o.oracle for o in report.outcomes}
    assert len(verdicts) >= 10 and set(verdicts.values()) == {oracle.AGREES}, report.oracle_details()
    narrow = suite.run("interpreter", CI, {"elementwise"}, "add[bfloat16xbfloat16]", generated=False, oracle="triton")
    assert [o.oracle_message.split(":")[0] for o in narrow.outcomes] == ["interpreter-narrow-float-bits"]


@needs_triton
def test_generated_programs_agree_with_triton():
    report = suite.run("interpreter", CI, {"generated_int"}, seed=3, max_examples=5, oracle="triton")
    assert [o.oracle for o in report.outcomes] == [oracle.AGREES] * 5, report.oracle_details()


@needs_triton
@pytest.mark.slow
def test_a_planted_tiles_bug_is_reported_as_a_disagreement_with_a_reproducer(monkeypatch, tmp_path):
    """The oracle is only useful if it sees tiles being wrong: shift the interpreter's results of one
    case by one and the case must differ, with a reproducer script that runs and exits 1."""
    from tiles.conformance import runner
    real_launch = runner.launch

    def wrong(kernel, grid, args, constexprs, backend):
        real_launch(kernel, grid, args, constexprs, backend)
        args[2][:] += 1  # the output of binary_kernel
    monkeypatch.setattr(runner, "launch", wrong)
    monkeypatch.setenv("TILES_CONFORMANCE_REPRO_DIR", str(tmp_path))
    report = suite.run("interpreter", CI, {"elementwise"}, "add[int32xint32]", generated=False, oracle="triton")
    (row,) = report.outcomes
    assert row.oracle == oracle.DIFFERS and "interpreter vs Triton" in row.oracle_message
    done = subprocess.run([sys.executable, row.oracle_reproducer], capture_output=True, text=True, timeout=300)
    # the script runs the unpatched interpreter: it agrees with Triton
    assert done.returncode == 0 and "outputs agree" in done.stdout, done.stdout + done.stderr


def _tiles_kernel(text: str, folder: Path):
    """Import a tiles kernel from source text (the tracer reads kernels' source from their file)."""
    import hashlib
    import importlib.util
    path = folder / f"tiles_{hashlib.sha1(text.encode()).hexdigest()[:12]}.py"
    path.write_text("import tiles\nimport tiles.language as tl\n\n\n" + text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@needs_triton
@pytest.mark.parametrize("divergence", KNOWN, ids=[d.name for d in KNOWN])
def test_known_divergence_reproducer_still_shows_and_is_explained(divergence, tmp_path):
    """Each entry's reproducer, on tiles' interpreter and on Triton's: Triton raises what the entry
    says, or the outputs differ; and ``explain`` names this entry for what was seen.  When a Triton
    release fixes one, this fails and the entry (triton_divergences.py) should go."""
    from tiles.conformance import backends as B
    from tiles.conformance.runner import copy_args, launch, op_dtypes
    r = divergence.reproducer
    kernel = _tiles_kernel(r.kernel, tmp_path)
    ref = copy_args(r.args())
    launch(kernel, r.grid, ref, r.constexprs, B.reference())
    evidence = Evidence(r.case_id, set(op_dtypes(kernel, r.args(), r.constexprs)), r.kernel, inputs=r.args())
    try:
        tri = triton_oracle.run(r.kernel, r.grid, r.args(), r.constexprs, tmp_path)
    except Exception as e:
        evidence.triton_error = f"{type(e).__name__}: {e}"
        assert r.raises and r.raises in evidence.triton_error, evidence.triton_error
    else:
        assert not r.raises, f"Triton no longer raises {r.raises!r}"
        differs = [i for i, a in enumerate(ref) if isinstance(a, np.ndarray) and
                   compare(np.asarray(a), np.asarray(tri[i]), EXACT) is not None]
        assert differs, "Triton now agrees with tiles on this reproducer"
        evidence.mismatch = "outputs differ"
    assert explain(evidence) is divergence
