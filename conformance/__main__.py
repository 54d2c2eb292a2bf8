"""``python -m conformance --backend opencl [--profile ci|thorough] [--json PATH]``."""

from __future__ import annotations

import argparse
import sys

from . import backends as B
from . import profiles
from .suite import dots, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    parser.add_argument("--backend", default="interpreter",
                        help="a registered backend name, an entry point of group tiles.backends, "
                             "or module:object (default: interpreter)")
    parser.add_argument("--profile", default="ci", choices=sorted(profiles.PROFILES))
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument("--family", action="append",
                        help="run only this family (repeatable), e.g. elementwise, generated_int")
    parser.add_argument("-k", dest="keyword", help="run only cases whose id contains this text")
    parser.add_argument("--no-generated", action="store_true", help="skip the generated programs")
    parser.add_argument("--list-backends", action="store_true", help="print the available backends")
    parser.add_argument("-v", "--verbose", action="store_true", help="list unsupported cases too")
    args = parser.parse_args(argv)
    if args.list_backends:
        print("\n".join(B.available()))
        return 0
    try:
        report = run(args.backend, profiles.get(args.profile), set(args.family) if args.family else None,
                     args.keyword, not args.no_generated, dots())
    except B.NotAvailable as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    statuses = ("failed", "broken", "unsupported") if args.verbose else ("failed", "broken")
    details = report.details(statuses)
    if details:
        print(details)
    print(report.table())
    if args.json:
        report.write_json(args.json)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
