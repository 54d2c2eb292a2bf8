"""Which op x element type pairs a run covers, against the pairs the curated corpus can cover.

``EXPECTED`` (``coverage_expected.json``) holds every ``op:dtype`` pair the thorough profile's
curated corpus traces to; the ci profile must run each at least once (``missing``).  Rewrite the
file after changing the corpus: ``python -m conformance.coverage --write``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

EXPECTED_FILE = Path(__file__).with_name("coverage_expected.json")


def expected() -> dict[str, set[str]]:
    if not EXPECTED_FILE.exists():
        return {}
    return {op: set(dtypes) for op, dtypes in json.loads(EXPECTED_FILE.read_text()).items()}


def missing(seen: dict[str, set[str]]) -> dict[str, set[str]]:
    """The expected pairs not in ``seen`` (op -> element types)."""
    gaps = {op: dtypes - seen.get(op, set()) for op, dtypes in expected().items()}
    return {op: d for op, d in gaps.items() if d}


def traced_pairs(cases: Iterable) -> dict[str, set[str]]:
    """op -> element types, from tracing each case's kernel (nothing is launched)."""
    from .runner import op_dtypes
    seen: dict[str, set[str]] = {}
    for c in cases:
        if c.kernel is None:
            continue
        for item in op_dtypes(c.kernel, c.args(), c.constexprs):
            op, _, dtype = item.partition(":")
            seen.setdefault(op, set()).update([dtype] if dtype else [])
    return seen


def main(argv: list[str]) -> int:
    from .profiles import CI, THOROUGH
    from .suite import Plan, planned_cases
    if argv == ["--write"]:
        pairs = traced_pairs(planned_cases(Plan("interpreter", THOROUGH, generated=False)))
        EXPECTED_FILE.write_text(json.dumps({op: sorted(d) for op, d in sorted(pairs.items())}, indent=1) + "\n")
        print(f"wrote {sum(map(len, pairs.values()))} pairs to {EXPECTED_FILE}")
        return 0
    gaps = missing(traced_pairs(planned_cases(Plan("interpreter", CI, generated=False))))
    for op, dtypes in gaps.items():
        print(f"{op}: {' '.join(sorted(dtypes))}")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
