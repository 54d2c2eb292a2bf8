"""The suite must catch real bugs: each planted single-op defect is reported as a failure."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import suite
from conformance.profiles import CI
from conformance.runner import FAILED, PASSED, Outcome

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


_SEARCH = """
import dataclasses, json, sys
from conformance.backends import reference
from conformance.generate.search import search
from conformance.profiles import CI
from conformance.tests import defects
defect, flavor = sys.argv[1], sys.argv[2]
profile = dataclasses.replace(CI, generated_examples=1000)
outcomes = search("generated_" + flavor, getattr(defects, defect)(), reference(), profile)
print(json.dumps([[o.status, o.message, o.reproducer] for o in outcomes if o.status != "passed"]))
"""


@pytest.mark.parametrize("defect, flavor", [(D.ModRoundsLikePython, "int"),
                                            (D.StoreIgnoresMask, "int"),
                                            (D.MaxPropagatesNan, "float")],
                         ids=["mod", "store-mask", "max-nan"])
def test_generated_programs_find_and_shrink_defect(defect, flavor, tmp_path):
    # The derandomized search runs in a fresh interpreter: in the full test run (after tests/), the
    # same search once found no disagreement in 1000 programs although it finds one in every
    # fresh process; the cause is not found yet (see the session notes).
    env = {**os.environ, "TILES_CONFORMANCE_REPRO_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _SEARCH, defect.__name__, flavor], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = [Outcome("generated", "shrunk counterexample", status, message, repro)
             for status, message, repro in json.loads(proc.stdout.strip().splitlines()[-1])]
    assert len(found) == 1 and found[0].status == FAILED, "\n".join(
        f"{o.status}: {o.message[:3000]}" for o in found) or "no disagreement in 1000 programs"
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
