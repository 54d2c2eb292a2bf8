"""A run's plan and its units of work: ``Plan`` (backend, profile, seed, selection), ``jobs(plan)``
(one per curated case, one per generated family, in a fixed order) and ``run_job`` (one job in this
process).  ``suite.run`` runs them here or in worker processes (``isolation.py``), which rebuild
the same jobs from the plan (``worker.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tiles.backends.base import Backend

from .case import Case, case_seed
from .corpus import all_cases
from .oracle import oracle_case, oracle_generated
from .profiles import CI, Profile
from .runner import Outcome, run_case

Progress = Callable[[Outcome], None]
DEFAULT_TIMEOUT = 300.0  # seconds one case (or one generated program) may take, compile included


def profiles_ci() -> Profile:
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
        return [run_case(job.case, backend, reference, oracle_case if plan.oracle else None)]
    from .generate.search import search
    return search(job.family, backend, reference, plan.profile, plan.seed, starting, plan.max_examples,
                  oracle_generated if plan.oracle else None)
