"""``python -m tiles.run script.py [args]`` / ``python -m tiles.run -m module [args]``: run a
program written for Triton on tiles, unchanged (the Triton compatibility mode:
``tiles.install_as_triton()`` before the program starts).  ``python -m tiles.run -m pytest``
runs a library's test suite so."""

from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m tiles.run script.py [args...]  |  python -m tiles.run -m module [args...]"


def main(argv: list[str]) -> int:
    """Run the script or module of ``argv`` as ``__main__`` with the alias installed."""
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not argv or argv == ["-m"]:
        print(USAGE, file=sys.stderr)
        return 2
    from tiles.as_triton import install_as_triton

    install_as_triton()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` sets it
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
