"""The suite must catch real bugs: each planted single-op defect is reported as a failure."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import suite
from conformance.generate.search import search
from conformance.profiles import CI
from conformance.runner import FAILED, PASSED

from . import defects as D

FULL_CORPUS = dataclasses.replace(CI, case_budget=None)
ROOT = Path(__file__).resolve().parents[2]

# defect -> the corpus family that must catch it
CAUGHT_BY = {
    D.ModRoundsLikePython: "integer",
    D.MaxPropagatesNan: "elementwise",
    D.ReductionDropsLast: "reduction",
    D.StoreIgnoresMask: "memory",
    D.AtomicAddLosesUpdates: "atomics",
}


@pytest.mark.parametrize("defect", list(CAUGHT_BY), ids=lambda d: d.name)
def test_corpus_reports_defect(defect):
    family = CAUGHT_BY[defect]
    report = suite.run(defect(), FULL_CORPUS, {family}, generated=False)
    failed = [o for o in report.outcomes if o.status == FAILED]
    assert failed, f"{defect.name} went unnoticed by the {family} family:\n{report.table()}"
    assert report.count(PASSED) > 0  # the defect is specific: most cases still pass


def test_interpreter_passes_what_the_defects_fail():
    for family in set(CAUGHT_BY.values()):
        report = suite.run("interpreter", FULL_CORPUS, {family}, generated=False)
        assert report.ok, report.details()


@pytest.mark.parametrize("defect, flavor", [(D.ModRoundsLikePython, "int"),
                                            (D.StoreIgnoresMask, "int"),
                                            (D.MaxPropagatesNan, "float")],
                         ids=["mod", "store-mask", "max-nan"])
def test_generated_programs_find_and_shrink_defect(defect, flavor, tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CONFORMANCE_REPRO_DIR", str(tmp_path))
    from conformance.backends import reference
    profile = dataclasses.replace(CI, generated_examples=1000)
    outcomes = search(f"generated_{flavor}", defect(), reference(), profile)
    found = [o for o in outcomes if o.status != PASSED]
    assert len(found) == 1 and found[0].status == FAILED, "\n".join(
        f"{o.status}: {o.message[:3000]}" for o in found) or f"no disagreement in {len(outcomes)} programs"
    (failure,) = found
    kernel = failure.message.split("kernel:\n", 1)[1].split("reproducer:", 1)[0]
    # generated programs start at up to ~40 lines; shrunk ones keep the faulty op and little else
    assert kernel.count("\n") <= 14, f"not shrunk:\n{kernel}"
    script = Path(failure.reproducer)
    assert script.exists()
    run = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "MISMATCH" in run.stdout
