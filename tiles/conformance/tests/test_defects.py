"""The suite must catch real bugs: each planted single-op defect is reported as a failure."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiles
from tiles.conformance import suite
from tiles.conformance.profiles import CI
from tiles.conformance.runner import BROKEN, FAILED, PASSED
from tiles.core import dtypes as DT

from . import defects as D

# every case of a family, over a representative dtype set (the whole ci dtype sweep takes minutes)
FULL_CORPUS = dataclasses.replace(CI, case_budget=None, dtypes=(
    DT.int1, DT.int8, DT.int32, DT.uint32, DT.int64, DT.uint8, DT.float8e4nv, DT.float16, DT.bfloat16, DT.float32))
# where tiles (with its conformance suite, where the defect backends live) is imported from
_IMPORT_ROOTS = dict.fromkeys([Path(tiles.__file__).resolve().parents[1]])

# defect -> the corpus family that must catch it
CAUGHT_BY = {
    D.ModRoundsLikePython: "integer",
    D.MaxPropagatesNan: "elementwise",
    D.ReductionDropsLast: "reduction",
    D.StoreIgnoresMask: "memory",
    D.AtomicAddLosesUpdates: "atomics",
}


# the families of a few hundred cases take a minute or more each on a loaded 2-core machine: slow
_QUICK_FAMILIES = {"integer", "atomics"}


@pytest.mark.parametrize("defect", [pytest.param(d, marks=[] if f in _QUICK_FAMILIES else [pytest.mark.slow])
                                    for d, f in CAUGHT_BY.items()], ids=lambda d: d.name)
def test_corpus_reports_defect(defect):
    family = CAUGHT_BY[defect]
    report = suite.run(defect(), FULL_CORPUS, {family}, generated=False)
    failed = [o for o in report.outcomes if o.status == FAILED]
    assert failed, f"{defect.name} went unnoticed by the {family} family:\n{report.table()}"
    assert report.count(PASSED) > 0  # the defect is specific: most cases still pass


@pytest.mark.slow
def test_interpreter_passes_what_the_defects_fail():
    for family in set(CAUGHT_BY.values()):
        report = suite.run("interpreter", FULL_CORPUS, {family}, generated=False)
        assert report.ok, report.details()


@pytest.mark.slow
@pytest.mark.parametrize("defect, flavor", [(D.ModRoundsLikePython, "int"),
                                            (D.StoreIgnoresMask, "int"),
                                            (D.MaxPropagatesNan, "float"),
                                            (D.AtomicAddLosesUpdates, "int")],
                         ids=["mod", "store-mask", "max-nan", "atomic-add-racy"])
def test_generated_programs_find_and_shrink_defect(defect, flavor, tmp_path, monkeypatch):
    # the search runs in a worker process, as every isolated run does: nothing an earlier test left
    # in this process (caches, Hypothesis state) can change what it finds
    monkeypatch.setenv("TILES_CONFORMANCE_REPRO_DIR", str(tmp_path))
    report = suite.run(defect(), CI, {f"generated_{flavor}"}, seed=0, max_examples=1000, workers=1)
    found = [o for o in report.outcomes if o.status != PASSED]
    assert len(found) == 1 and found[0].status == FAILED, "\n".join(
        f"{o.status}: {o.message[:3000]}" for o in found) or "no disagreement in 1000 programs"
    (failure,) = found
    kernel = failure.message.split("kernel:\n", 1)[1].split("reproducer:", 1)[0]
    # generated programs start at up to ~40 lines; shrunk ones keep the faulty op and little else
    # (an if/else around it can stay: the max-nan search shrank to 17 lines with the richer generator)
    assert kernel.count("\n") <= 20, f"not shrunk:\n{kernel}"
    scripts = list(tmp_path.glob("repro_*.py"))
    assert [str(p) for p in scripts] == [failure.reproducer], "one reproducer per failure, none per shrink step"
    run = subprocess.run([sys.executable, failure.reproducer], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": os.pathsep.join(map(str, _IMPORT_ROOTS)), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "MISMATCH" in run.stdout


@pytest.mark.parametrize("defect, why", [(D.CrashesOnIntegerDivision, "SIGSEGV"),
                                         (D.HangsOnIntegerDivision, "timed out")], ids=["segfault", "hang"])
def test_a_crash_or_hang_is_a_broken_row_and_the_run_goes_on(defect, why, tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CONFORMANCE_REPRO_DIR", str(tmp_path))
    report = suite.run(defect(), CI, {"integer"}, "_edges[int32]", generated=False, workers=1, timeout=15)
    broken = [o for o in report.outcomes if o.status == BROKEN]
    assert [o.name for o in broken] == ["floordiv_edges[int32]"], report.details()
    assert why in broken[0].message and "floordiv_edges[int32]" in broken[0].message
    assert Path(broken[0].reproducer).exists()
    assert report.count(PASSED) >= 3  # the cases after the crash ran too
