"""A whole run: the curated corpus, the examples and the generated programs, into one report."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable

from tiles.backends.base import Backend

from . import backends as B
from .case import Case
from .corpus import all_cases
from .profiles import Profile
from .report import Report
from .runner import Outcome, run_case

Progress = Callable[[Outcome], None]


def profiles_ci() -> Profile:
    from .profiles import CI
    return CI


def selected(cases: Iterable[Case], families: set[str] | None, keyword: str | None) -> list[Case]:
    return [c for c in cases
            if (families is None or c.family in families) and (keyword is None or keyword in c.id)]


def corpus_cases(profile: Profile) -> list[Case]:
    from .corpus.examples import example_cases
    return all_cases(profile) + example_cases(profile)


def run(backend: str | Backend, profile: Profile, families: set[str] | None = None,
        keyword: str | None = None, generated: bool = True, progress: Progress | None = None) -> Report:
    be = B.resolve(backend)
    ref = B.reference()
    report = Report(be.name, profile.name)
    report.declared = [f"{getattr(op, 'value', op)} within {rtol:.2g}*|exact| + {atol:.2g}"
                       for op, rtol, atol in be.target().approximate]
    chosen = selected(corpus_cases(profile), families, keyword)
    by_family: dict[str, list[Case]] = {}
    for c in chosen:
        by_family.setdefault(c.family, []).append(c)
    for c in [c for cases in by_family.values() for c in profile.thin(cases)]:
        outcome = run_case(c, be, ref)
        report.add(outcome)
        if progress:
            progress(outcome)
    if generated:
        from .generate.search import GENERATED_FAMILIES, search
        for family in GENERATED_FAMILIES:
            if (families is None or family in families) and (keyword is None or keyword in family):
                for outcome in search(family, be, ref, profile):
                    report.add(outcome)
                    if progress:
                        progress(outcome)
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
