"""``python -m conformance --backend opencl [--profile ci|thorough] [--seed N] [--jobs N] [--json PATH]``."""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from . import backends as B
from . import profiles
from .suite import DEFAULT_TIMEOUT, Plan, backend_spec, dots, jobs, run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    p.add_argument("--backend", default="interpreter",
                   help="a registered backend name, an entry point of group tiles.backends, "
                        "or module:object (default: interpreter)")
    p.add_argument("--profile", default="ci", choices=sorted(profiles.PROFILES))
    p.add_argument("--seed", type=int, default=None,
                   help="seed of every input and generated program (ci: 0; thorough: a fresh one, printed); "
                        "the same seed runs the same cases")
    p.add_argument("--max-examples", type=int, default=None,
                   help="generated programs per generator family (default: the profile's)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes; each case runs in one with a timeout, so a crash or hang is a "
                        "broken row (0: run in this process, no isolation)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds one case or generated program may take (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--repro-dir", help="where reproducer scripts go "
                                       "(default $TILES_CONFORMANCE_REPRO_DIR or /tmp/tiles-conformance)")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--family", action="append",
                   help="run only this family (repeatable), e.g. elementwise, generated_int")
    p.add_argument("-k", dest="keyword", help="run only cases whose id contains this text")
    p.add_argument("--no-generated", action="store_true", help="skip the generated programs")
    p.add_argument("--oracle", choices=["triton"], default=None,
                   help="a second oracle: every case also runs on Triton (its CPU interpreter, or compiled "
                        "Triton on a GPU) and the report shows where the interpreter, Triton and the backend "
                        "disagree; needs triton and torch importable")
    p.add_argument("--list", action="store_true", help="print the cases this command would run, and exit")
    p.add_argument("--coverage", action="store_true", help="print the op x dtype coverage of the run")
    p.add_argument("--list-backends", action="store_true", help="print the available backends")
    p.add_argument("-v", "--verbose", action="store_true", help="list unsupported cases too")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.list_backends:
        print("\n".join(B.available()))
        return 0
    profile = profiles.get(args.profile)
    seed = args.seed if args.seed is not None else (secrets.randbits(32) if profile.random_seed else 0)
    families = set(args.family) if args.family else None
    if args.repro_dir:
        os.environ["TILES_CONFORMANCE_REPRO_DIR"] = os.path.abspath(args.repro_dir)
    if args.list:
        plan = Plan(args.backend, profile, seed, families, args.keyword, not args.no_generated,
                    args.max_examples)
        for job in jobs(plan):
            count = args.max_examples or profile.generated_examples
            print(f"{job.id}  ({count} generated programs, seed {seed})" if job.generated else job.id)
        return 0
    if args.oracle:
        from .triton_oracle import OracleUnavailable, check_available
        try:
            check_available(args.oracle)
        except OracleUnavailable as e:
            print(f"conformance: {e}", file=sys.stderr)
            return 2
    print(f"conformance: seed {seed} (replay with --seed {seed})", file=sys.stderr)
    try:
        report = run(backend_spec(args.backend), profile, families, args.keyword, not args.no_generated,
                     dots(), seed=seed, max_examples=args.max_examples, workers=args.jobs,
                     timeout=args.timeout, oracle=args.oracle)
    except B.NotAvailable as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    statuses = ("failed", "broken", "unsupported") if args.verbose else ("failed", "broken")
    details = report.details(statuses)
    if details:
        print(details)
    if args.oracle:
        oracle_details = report.oracle_details(verbose=args.verbose)
        if oracle_details:
            print(oracle_details)
    if args.coverage:
        print(report.coverage_table())
    print(report.table())
    if args.json:
        report.write_json(args.json)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
