"""A whole run: the curated corpus, the examples and the generated programs, into one report.

A run is a ``Plan`` (backend, profile, seed, selection); ``jobs(plan)`` lists its units of work
(one per curated case, one per generated family) in a fixed order.  With ``jobs=0`` they run in
this process; otherwise each runs in a worker process (``isolation.py``), so that a crash or a
hang is a ``broken`` row and the run goes on.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tiles.backends.base import Backend

from . import backends as B
from .case import Case, case_seed
from .corpus import all_cases
from .profiles import Profile
from .report import Report
from .runner import Outcome, run_case

Progress = Callable[[Outcome], None]
DEFAULT_TIMEOUT = 300.0  # seconds one case (or one generated program) may take, compile included


def profiles_ci() -> Profile:
    from .profiles import CI
    return CI


@dataclass
class Plan:
    """Everything a worker needs to rebuild the same cases with the same inputs."""

    backend: str  # a spec ``registry.get`` resolves in a fresh process
    profile: Profile
    seed: int = 0
    families: set[str] | None = None
    keyword: str | None = None
    generated: bool = True
    max_examples: int | None = None  # generated programs per generator family (profile's default)
    repro_dir: str | None = None
    oracle: str | None = None  # a second oracle every case also runs on ("triton"), or None


@dataclass
class Job:
    """One unit of work: a curated case (``case``) or a generated family's search (``family``)."""

    id: str
    family: str
    case: Case | None = None
    generated: bool = False
    outcomes: list[Outcome] = field(default_factory=list)


def selected(cases: Iterable[Case], families: set[str] | None, keyword: str | None) -> list[Case]:
    return [c for c in cases
            if (families is None or c.family in families) and (keyword is None or keyword in c.id)]


def corpus_cases(profile: Profile) -> list[Case]:
    from .corpus.examples import example_cases
    return all_cases(profile) + example_cases(profile)


def planned_cases(plan: Plan) -> list[Case]:
    """The curated cases of ``plan`` in run order, each with its seed from the run's seed."""
    by_family: dict[str, list[Case]] = {}
    for c in selected(corpus_cases(plan.profile), plan.families, plan.keyword):
        by_family.setdefault(c.family, []).append(c)
    chosen = [c for cases in by_family.values() for c in plan.profile.thin(cases)]
    for c in chosen:
        c.seed = case_seed(plan.seed, c.id)
    return chosen


def generated_families(plan: Plan) -> list[str]:
    if not plan.generated:
        return []
    from .generate.search import GENERATED_FAMILIES
    return [f for f in GENERATED_FAMILIES
            if (plan.families is None or f in plan.families) and (plan.keyword is None or plan.keyword in f)]


def jobs(plan: Plan) -> list[Job]:
    out = [Job(c.id, c.family, case=c) for c in planned_cases(plan)]
    out += [Job(f, f, generated=True) for f in generated_families(plan)]
    return out


def run_job(job: Job, plan: Plan, backend: Backend, reference: Backend,
            starting: Callable[[object], None] | None = None) -> list[Outcome]:
    """Run one job in this process."""
    if job.case is not None:
        return [run_case(job.case, backend, reference, plan.oracle)]
    from .generate.search import search
    return search(job.family, backend, reference, plan.profile, plan.seed, starting, plan.max_examples,
                  plan.oracle)


def backend_spec(backend: str | Backend) -> str:
    if isinstance(backend, str):
        return backend
    from .reproducer import backend_spec as spec
    return spec(backend)


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
        from .isolation import run_isolated
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
