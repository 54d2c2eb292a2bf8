"""``python -m conformance``: the suite's command line (``tiles.conformance.__main__``)."""

import sys

from tiles.conformance.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
