"""A whole run: the curated corpus, the examples and the generated programs, into one report.

A run is a ``Plan`` (backend, profile, seed, selection); ``jobs(plan)`` lists its units of work
(one per curated case, one per generated family) in a fixed order (``plan.py``).  With ``jobs=0`` they run in
this process; otherwise each runs in a worker process (``isolation.py``), so that a crash or a
hang is a ``broken`` row and the run goes on.
"""

from __future__ import annotations

import os
import sys
import time

from tiles.backends.base import Backend

from . import backends as B
from .isolation import run_isolated
from .plan import (  # noqa: F401  (the suite's names, as before plan.py)
    DEFAULT_TIMEOUT,
    Job,
    Plan,
    Progress,
    corpus_cases,
    generated_families,
    jobs,
    planned_cases,
    profiles_ci,
    run_job,
    selected,
)
from .profiles import Profile
from .report import Report
from .reproducer import backend_spec as reproducer_backend_spec
from .runner import Outcome


def backend_spec(backend: str | Backend) -> str:
    if isinstance(backend, str):
        return backend
    return reproducer_backend_spec(backend)


def new_report(be: Backend, plan: Plan) -> Report:
    import tiles
    report = Report(be.name, plan.profile.name, seed=plan.seed, backend_spec=plan.backend,
                    tiles_version=tiles.__version__, max_examples=plan.max_examples or
                    plan.profile.generated_examples)
    try:
        report.target = be.target().arch
    except Exception as e:  # the report still says what it could
        report.target = f"unknown ({type(e).__name__}: {e})"
    if plan.oracle:
        from .triton_oracle import mode
        report.oracle = f"{plan.oracle}: {mode()}"
    report.declared = [f"{getattr(op, 'value', op)} within {rtol:.2g}*|exact| + {atol:.2g}"
                       for op, rtol, atol in be.target().approximate]
    return report


def run(backend: str | Backend, profile: Profile, families: set[str] | None = None,
        keyword: str | None = None, generated: bool = True, progress: Progress | None = None, *,
        seed: int = 0, max_examples: int | None = None, workers: int = 0,
        timeout: float = DEFAULT_TIMEOUT, repro_dir: str | None = None, oracle: str | None = None) -> Report:
    """Run the suite; ``workers`` worker processes (0: everything in this process, no isolation).
    ``oracle``: also run every case on it ("triton"; ``triton_oracle.OracleUnavailable`` when it
    cannot run here)."""
    be = B.resolve(backend)
    if oracle:
        from .triton_oracle import check_available
        check_available(oracle)
    plan = Plan(backend_spec(backend), profile, seed, families, keyword, generated, max_examples, repro_dir,
                oracle)
    report = new_report(be, plan)
    work = jobs(plan)
    start = time.perf_counter()
    if repro_dir:
        os.environ["TILES_CONFORMANCE_REPRO_DIR"] = repro_dir
    if workers <= 0:
        ref = B.reference()
        for job in work:
            for outcome in run_job(job, plan, be, ref):
                job.outcomes.append(outcome)
                if progress:
                    progress(outcome)
    else:
        run_isolated(plan, work, be, workers, timeout, progress)
    for job in work:
        for outcome in job.outcomes:
            report.add(outcome)
    report.seconds = round(time.perf_counter() - start, 2)
    return report


def dots(stream=sys.stderr) -> Progress:
    """A progress printer: one character per case, a newline every 80."""
    marks = {"passed": ".", "failed": "F", "unsupported": "u", "broken": "B"}
    count = [0, time.time()]

    def show(o: Outcome) -> None:
        stream.write(marks.get(o.status, "?"))
        count[0] += 1
        if count[0] % 80 == 0:
            stream.write(f" {count[0]} ({time.time() - count[1]:.0f}s)\n")
        stream.flush()
    return show
