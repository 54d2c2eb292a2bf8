"""``python -m conformance.coverage [--write]``: ``tiles.conformance.coverage``'s command line."""

import sys

from tiles.conformance import coverage

if __name__ == "__main__":
    sys.exit(coverage.main(sys.argv[1:]))
else:  # imported: the suite's own module, not a copy
    sys.modules[__name__] = coverage
