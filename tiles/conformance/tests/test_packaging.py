"""The suite ships with tiles: installed from a wheel, it runs from any folder (no checkout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _build_wheel(out: Path) -> Path:
    # build isolation fetches setuptools>=68 from the package index; offline, the installed one
    for extra in ([], ["--no-build-isolation"]):
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out),
                               *extra], capture_output=True, text=True, timeout=600)
        wheels = list(out.glob("tiles-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
    raise AssertionError(f"could not build a wheel of tiles:\n{proc.stdout}\n{proc.stderr}")


@pytest.mark.slow
def test_installed_suite_runs_from_outside_the_checkout(tmp_path):
    wheel = _build_wheel(tmp_path / "dist")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PYTHONPATH": str(site), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "TILES_CONFORMANCE_REPRO_DIR": str(tmp_path / "repro"), "HOME": str(tmp_path)}

    where = subprocess.run([sys.executable, "-c", "import conformance, tiles; print(conformance.__file__, "
                            "tiles.__file__)"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    assert all(p.startswith(str(site)) for p in where.stdout.split()), where.stdout

    run = subprocess.run([sys.executable, "-m", "conformance", "--family", "integer", "-k", "add_edges",
                          "--no-generated", "--jobs", "1", "--json", "report.json"],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "integer" in run.stdout and (elsewhere / "report.json").exists()

    listed = subprocess.run([str(site / "bin" / "tiles"), "conformance", "--list", "--family", "casts"],
                            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "casts/convert[" in listed.stdout
