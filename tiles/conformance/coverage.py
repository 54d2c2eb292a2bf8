"""Which op x element type pairs a run covers, against the pairs the curated corpus can cover.

``EXPECTED`` (``coverage_expected.json``) holds every ``op:dtype`` pair the thorough profile's
curated corpus traces to; the ci profile must run each at least once (``missing``).  Rewrite the
file after changing the corpus: ``python -m conformance.coverage --write``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from .plan import Plan, planned_cases
from .profiles import CI, THOROUGH
from .runner import op_dtypes

EXPECTED_FILE = Path(__file__).with_name("coverage_expected.json")
SELECTION_FILE = Path(__file__).with_name("ci_cases.txt")


def expected() -> dict[str, set[str]]:
    if not EXPECTED_FILE.exists():
        return {}
    return {op: set(dtypes) for op, dtypes in json.loads(EXPECTED_FILE.read_text()).items()}


def missing(seen: dict[str, set[str]]) -> dict[str, set[str]]:
    """The expected pairs not in ``seen`` (op -> element types)."""
    gaps = {op: dtypes - seen.get(op, set()) for op, dtypes in expected().items()}
    return {op: d for op, d in gaps.items() if d}


def case_pairs(c) -> set[str]:  # noqa: ANN001
    if c.kernel is None:
        return set()
    return set(op_dtypes(c.kernel, c.args(), c.constexprs))


def as_table(pairs: Iterable[str]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for item in pairs:
        op, _, dtype = item.partition(":")
        seen.setdefault(op, set()).update([dtype] if dtype else [])
    return seen


def traced_pairs(cases: Iterable) -> dict[str, set[str]]:
    """op -> element types, from tracing each case's kernel (nothing is launched)."""
    return as_table(p for c in cases for p in case_pairs(c))


def greedy_selection(cases: list, covered: set[str]) -> list[str]:
    """Ids of a few cases that, with ``covered``, trace to every pair the cases can reach:
    repeatedly the case adding most new pairs (the earlier, smaller one on a tie)."""
    pairs = {c.id: case_pairs(c) - covered for c in cases}
    chosen: list[str] = []
    while True:
        best = max(pairs, key=lambda i: len(pairs[i]), default=None)
        if best is None or not pairs[best]:
            return chosen
        chosen.append(best)
        new = pairs.pop(best)
        for i in pairs:
            pairs[i] -= new


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        pairs = traced_pairs(planned_cases(Plan("interpreter", THOROUGH, generated=False)))
        EXPECTED_FILE.write_text(json.dumps({op: sorted(d) for op, d in sorted(pairs.items())}, indent=1) + "\n")
        print(f"wrote {sum(map(len, pairs.values()))} pairs to {EXPECTED_FILE}")
        SELECTION_FILE.write_text("")
        everything = planned_cases(Plan("interpreter", dataclasses.replace(CI, case_budget=None), generated=False))
        spread = planned_cases(Plan("interpreter", CI, generated=False))
        covered = {p for c in spread for p in case_pairs(c)}
        chosen = greedy_selection([c for c in everything if c.id not in {s.id for s in spread}], covered)
        SELECTION_FILE.write_text("".join(i + "\n" for i in sorted(chosen)))
        print(f"wrote {len(chosen)} case ids to {SELECTION_FILE} (ci runs {len(spread) + len(chosen)} curated cases)")
        return 0
    gaps = missing(traced_pairs(planned_cases(Plan("interpreter", CI, generated=False))))
    for op, dtypes in gaps.items():
        print(f"{op}: {' '.join(sorted(dtypes))}")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
