"""Profiles: how much of the corpus and how many generated programs a run covers."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from tiles.core import dtypes as D
from tiles.core.dtypes import DType


@dataclass(frozen=True)
class Profile:
    name: str
    dtypes: tuple[DType, ...]      # element types the curated cases sweep over
    shapes: tuple[int, ...]        # 1D block sizes
    shapes_2d: tuple[tuple[int, int], ...]
    generated_examples: int        # generated programs per generator family
    derandomize: bool
    case_budget: int | None = None  # at most this many curated cases per family (an even spread)

    def hypothesis_settings(self) -> settings:
        # report_multiple_bugs=False: after the first disagreement Hypothesis shrinks it and stops;
        # otherwise whether it goes on to find a second one depends on a 10-second wall-clock rule.
        return settings(max_examples=self.generated_examples, derandomize=self.derandomize,
                        deadline=None, database=None, print_blob=False, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck))

    def thin(self, cases: list) -> list:
        """Every k-th case, so that at most ``case_budget`` remain (all when there is no budget)."""
        if self.case_budget is None or len(cases) <= self.case_budget:
            return cases
        step = len(cases) / self.case_budget
        return [cases[int(i * step)] for i in range(self.case_budget)]

    def sweep(self, dtypes: tuple[DType, ...]) -> tuple[DType, ...]:
        """The members of ``dtypes`` this profile covers."""
        return tuple(d for d in dtypes if d in self.dtypes)


CI = Profile(
    "ci",
    dtypes=(D.int1, D.int8, D.int32, D.uint32, D.int64, D.uint8,
            D.float8e4nv, D.float16, D.bfloat16, D.float32),
    shapes=(16, 128),
    shapes_2d=((4, 32), (16, 16)),
    generated_examples=30,
    derandomize=True,
    case_budget=25,
)

THOROUGH = Profile(
    "thorough",
    dtypes=D.ALL_DTYPES,
    shapes=(1, 2, 16, 128, 1024),
    shapes_2d=((1, 16), (4, 32), (16, 16), (32, 64), (128, 8)),
    generated_examples=400,
    derandomize=False,
)

PROFILES = {p.name: p for p in (CI, THOROUGH)}


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None
