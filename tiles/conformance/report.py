"""The per-family summary: a terminal table and a JSON document."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from .coverage import missing
from .oracle import ORACLE_STATUSES
from .runner import BROKEN, FAILED, PASSED, UNSUPPORTED, Outcome

STATUSES = (PASSED, FAILED, UNSUPPORTED, BROKEN)


@dataclass
class Report:
    backend: str
    profile: str
    outcomes: list[Outcome] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)  # the backend's declared approximations
    seed: int = 0
    backend_spec: str = ""
    tiles_version: str = ""
    target: str = ""
    max_examples: int = 0
    seconds: float = 0.0
    oracle: str = ""  # the second oracle and how it ran ("triton: Triton's interpreter ..."), or ""

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def counts(self) -> dict[str, Counter[str]]:
        table: dict[str, Counter[str]] = {}
        for o in self.outcomes:
            table.setdefault(o.family, Counter())[o.status] += 1
        return dict(sorted(table.items()))

    def count(self, status: str, family: str | None = None) -> int:
        return sum(1 for o in self.outcomes if o.status == status and family in (None, o.family))

    def oracle_count(self, status: str, family: str | None = None) -> int:
        return sum(1 for o in self.outcomes if o.oracle == status and family in (None, o.family))

    @property
    def ok(self) -> bool:
        """Nothing failed or broke, and (with an oracle) no disagreement with it is unexplained."""
        return self.count(FAILED) == 0 and self.count(BROKEN) == 0 and self.oracle_count("differs") == 0

    def replay_command(self) -> str:
        oracle = f" --oracle {self.oracle.split(':')[0]}" if self.oracle else ""
        return (f"python -m conformance --backend {self.backend_spec or self.backend} --profile {self.profile} "
                f"--seed {self.seed} --max-examples {self.max_examples}{oracle}")

    def to_json(self) -> dict:
        return {
            "backend": self.backend,
            "backend_spec": self.backend_spec,
            "profile": self.profile,
            "seed": self.seed,
            "max_examples": self.max_examples,
            "replay": self.replay_command(),
            "target": self.target,
            "tiles_version": self.tiles_version,
            "declared_approximations": self.declared,
            "seconds": self.seconds,
            "families": {fam: {s: c[s] for s in STATUSES} for fam, c in self.counts().items()},
            "totals": {s: self.count(s) for s in STATUSES},
            "oracle": self.oracle,
            "oracle_totals": {s: self.oracle_count(s) for s in ORACLE_STATUSES} if self.oracle else {},
            "cases": [{"id": o.id, "family": o.family, "status": o.status, "message": o.message,
                       "reproducer": o.reproducer, "seconds": o.seconds, "seed": o.seed,
                       **({"oracle": o.oracle, "oracle_message": o.oracle_message,
                           "oracle_reproducer": o.oracle_reproducer} if self.oracle else {})}
                      for o in self.outcomes],
        }

    def write_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=2)

    def table(self) -> str:
        rows = [(fam, *(str(c[s]) for s in STATUSES)) for fam, c in self.counts().items()]
        rows.append(("total", *(str(self.count(s)) for s in STATUSES)))
        header: tuple[str, ...] = ("family", *STATUSES)
        if self.oracle:  # three more columns: how each family's cases compare with the oracle
            name = self.oracle.split(":")[0]
            header += tuple(f"{name} {s}" for s in ORACLE_STATUSES)
            families = [*self.counts(), None]
            rows = [(*r, *(str(self.oracle_count(s, fam)) for s in ORACLE_STATUSES))
                    for r, fam in zip(rows, families)]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

        def line(cells: tuple[str, ...]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths)))

        out = [f"conformance: backend {self.backend} ({self.target}), profile {self.profile}, seed {self.seed}, "
               f"tiles {self.tiles_version}, {self.seconds:.0f} s"]
        if self.oracle:
            out.append(f"second oracle {self.oracle}")
        if self.declared:
            out.append("declared float32 approximations (outputs checked against them): " + "; ".join(self.declared))
        out += [line(header), line(tuple("-" * w for w in widths))]
        out += [line(r) for r in rows[:-1]] + [line(tuple("-" * w for w in widths)), line(rows[-1])]
        return "\n".join(out)

    def coverage(self, statuses: tuple[str, ...] = (PASSED, FAILED)) -> dict[str, set[str]]:
        """op -> the element types it ran on (from every case with one of ``statuses``)."""
        seen: dict[str, set[str]] = {}
        for o in self.outcomes:
            if o.status in statuses:
                for item in o.coverage:
                    op, _, dtype = item.partition(":")
                    seen.setdefault(op, set()).update([dtype] if dtype else [])
        return dict(sorted(seen.items()))

    def coverage_table(self) -> str:
        seen = self.coverage()
        lines = ["op x dtype coverage (cases that ran on the backend):"]
        for op, dtypes in seen.items():
            lines.append(f"  {op:24} {' '.join(sorted(dtypes))}")
        gaps = missing(seen)
        declared = self.coverage((UNSUPPORTED,))
        skipped = {op: d & declared.get(op, set()) for op, d in gaps.items()}
        skipped = {op: d for op, d in skipped.items() if d}
        unreached = {op: d - skipped.get(op, set()) for op, d in gaps.items()}
        unreached = {op: d for op, d in unreached.items() if d}

        def pairs(table: dict[str, set[str]]) -> str:
            return "; ".join(f"{op}: {' '.join(sorted(d))}" for op, d in table.items()) or "none"
        lines.append(f"not run, the backend declares them unsupported: {pairs(skipped)}")
        lines.append(f"missing op x dtype pairs: {pairs(unreached)}")
        return "\n".join(lines)

    def details(self, statuses: tuple[str, ...] = (FAILED, BROKEN, UNSUPPORTED)) -> str:
        lines = []
        for o in self.outcomes:
            if o.status in statuses:
                first = o.message.splitlines()[0] if o.message else ""
                lines.append(f"{o.status.upper():11} {o.id}: {first}")
                if o.status != UNSUPPORTED:
                    lines += ["    " + m for m in o.message.splitlines()[1:12]]
                if o.reproducer:
                    lines.append(f"    reproducer: {o.reproducer}")
        return "\n".join(lines)

    def oracle_details(self, verbose: bool = False) -> str:
        """Every disagreement with the oracle (``differs``), then the known divergences: each case
        with ``verbose``, else a count per divergence."""
        lines = []
        for o in self.outcomes:
            if o.oracle == "differs":
                lines.append(f"DIFFERS     {o.id} (vs {self.oracle.split(':')[0]}):")
                lines += ["    " + m for m in o.oracle_message.splitlines()[:40]]
                if o.oracle_reproducer:
                    lines.append(f"    reproducer: {o.oracle_reproducer}")
        known = Counter(o.oracle_message.split(":")[0] for o in self.outcomes if o.oracle == "known")
        for o in self.outcomes:
            if verbose and o.oracle == "known":
                lines.append(f"KNOWN       {o.id}: {o.oracle_message.splitlines()[0]}")
        if known:
            lines.append("known divergences (triton_divergences.py): " +
                         ", ".join(f"{name} x{n}" for name, n in sorted(known.items())))
        return "\n".join(lines)
