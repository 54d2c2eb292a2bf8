"""Replayable runs and standalone reproducers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
from tiles.conformance import backends as B
from tiles.conformance import reproducer, suite
from tiles.conformance.generate.search import search
from tiles.conformance.profiles import CI
from tiles.conformance.suite import Plan, jobs, planned_cases


def _signature(seed: int, family: str) -> list[tuple[str, int, bytes]]:
    out = []
    for job in jobs(Plan("interpreter", CI, seed, {family}, generated=False)):
        assert job.case is not None
        arrays = [a for a in job.case.args() if isinstance(a, np.ndarray)]
        out.append((job.id, job.case.seed, b"".join(a.tobytes() for a in arrays)))
    return out


def test_same_seed_same_cases_and_inputs():
    first, again, other = _signature(7, "elementwise"), _signature(7, "elementwise"), _signature(8, "elementwise")
    assert first == again
    assert [i for i, *_ in first] == [i for i, *_ in other]  # the same cases...
    assert [b for *_, b in first] != [b for *_, b in other]  # ...with other inputs


def test_same_seed_same_generated_programs():
    ref = B.reference()

    def names(seed: int) -> list[str]:
        return [o.name for o in search("generated_int", ref, ref, CI, seed, max_examples=6)]
    assert names(3) == names(3)
    assert names(3) != names(4)


def test_report_holds_what_a_replay_needs(tmp_path):
    report = suite.run("interpreter", CI, {"integer"}, "add_edges", generated=False, seed=11)
    data = report.to_json()
    assert data["seed"] == 11 and data["tiles_version"] == tiles.__version__ and data["target"]
    assert "--seed 11" in data["replay"] and "declared_approximations" in data
    assert data["cases"] and all(c["seconds"] > 0 and c["seed"] is not None for c in data["cases"])


def test_list_prints_the_planned_cases(capsys):
    from tiles.conformance.__main__ import main
    assert main(["--list", "--family", "casts", "--family", "generated_int", "--seed", "5"]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = [c.id for c in planned_cases(Plan("interpreter", CI, 5, {"casts"}, generated=False))]
    assert printed[:-1] == expected and printed[-1].startswith("generated_int")


def _one_case_per_family() -> list:
    seen: dict[str, object] = {}
    for c in planned_cases(Plan("interpreter", CI, 0, generated=False)):
        if c.kernel is not None and c.family not in seen:
            seen[c.family] = c
    return list(seen.values())


@pytest.mark.parametrize("case", _one_case_per_family(), ids=lambda c: c.family)
def test_reproducer_runs_outside_the_checkout(case, tmp_path, monkeypatch):
    monkeypatch.setenv("TILES_CONFORMANCE_REPRO_DIR", str(tmp_path))
    script = reproducer.write_case_reproducer(case, case.args(), B.reference())
    text = Path(script).read_text()
    assert not re.search(r"^\s*(from|import) (tiles\.)?conformance", text, re.MULTILINE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # only tiles is importable: the kernel and its helpers are inlined in the script
    env = {"PYTHONPATH": str(Path(tiles.__file__).resolve().parents[1]), "PATH": os.environ.get("PATH", "")}
    run = subprocess.run([sys.executable, script], cwd=elsewhere, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "outputs agree" in run.stdout
