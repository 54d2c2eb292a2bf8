"""Profiles: how much of the corpus and how many generated programs a run covers."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings

from tiles.core import dtypes as D
from tiles.core.dtypes import DType


@dataclass(frozen=True)
class Profile:
    name: str
    dtypes: tuple[DType, ...]      # element types the curated cases sweep over
    shapes: tuple[int, ...]        # 1D block sizes
    shapes_2d: tuple[tuple[int, int], ...]
    generated_examples: int        # generated programs per generator family
    random_seed: bool              # without --seed: a fresh seed per run (printed) instead of 0
    case_budget: int | None = None  # at most this many curated cases per family (an even spread)
    # plus the cases listed in this file (chosen to cover every op x dtype pair, coverage.py)
    selection: str | None = None
    full_families: tuple[str, ...] = ()  # families run whole whatever the budget

    def hypothesis_settings(self, max_examples: int | None = None) -> settings:
        # report_multiple_bugs=False: after the first disagreement Hypothesis shrinks it and stops;
        # otherwise whether it goes on to find a second one depends on a 10-second wall-clock rule.
        # Programs are drawn from the run's seed (``hypothesis.seed``), never derandomized: the same
        # seed gives the same programs, a new seed new ones.
        # The explain phase (which parts of a shrunk failure do not matter) re-runs it hundreds of
        # times for a comment the reproducer does not use: left out.
        return settings(max_examples=max_examples or self.generated_examples, derandomize=False,
                        deadline=None, database=None, print_blob=False, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        phases=[p for p in Phase if p is not Phase.explain])

    def thin(self, cases: list) -> list:
        """Every k-th case, so that at most ``case_budget`` remain (all when there is no budget),
        and every case of the selection file; a family of ``full_families`` is kept whole."""
        if self.case_budget is None or len(cases) <= self.case_budget or cases[0].family in self.full_families:
            return cases
        step = len(cases) / self.case_budget
        spread = {int(i * step) for i in range(self.case_budget)}
        chosen = self.selected_ids()
        return [c for i, c in enumerate(cases) if i in spread or c.id in chosen]

    def selected_ids(self) -> frozenset[str]:
        return _selection(self.selection) if self.selection else frozenset()

    def sweep(self, dtypes: tuple[DType, ...]) -> tuple[DType, ...]:
        """The members of ``dtypes`` this profile covers."""
        return tuple(d for d in dtypes if d in self.dtypes)


@functools.cache
def _selection(name: str) -> frozenset[str]:
    path = Path(__file__).with_name(name)
    if not path.exists():
        return frozenset()
    return frozenset(line.strip() for line in path.read_text().splitlines() if line.strip())


CI = Profile(
    "ci",
    dtypes=tuple(d for d in D.ALL_DTYPES if d in D.LOWERED_DTYPES),
    shapes=(16, 128),
    shapes_2d=((4, 32), (16, 16)),
    generated_examples=20,  # distinct programs (repeats are not run): as many as 30 draws gave before
    random_seed=False,
    case_budget=25,
    selection="ci_cases.txt",
    full_families=("classic", "guards", "examples", "sync"),
)

THOROUGH = Profile(
    "thorough",
    dtypes=tuple(d for d in D.ALL_DTYPES if d in D.LOWERED_DTYPES),
    shapes=(1, 2, 16, 128, 1024),
    shapes_2d=((1, 16), (4, 32), (16, 16), (32, 64), (128, 8)),
    generated_examples=400,
    random_seed=True,
)

PROFILES = {p.name: p for p in (CI, THOROUGH)}


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None
