"""Run every corpus kernel on the named backends and print its outcome; ``--dict`` prints the
failures in expected_failures.py's format.

    python tests/compat/outcomes.py interpreter,opencl [--dict] [kernel,kernel,...]

The coordinator's tool for refreshing expected_failures.py (and for a first look at CUDA);
the tests themselves are test_compat.py.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from compat_harness import kernel_names, load  # noqa: E402

import tiles  # noqa: E402

ROOT = str(HERE.parents[1]) + "/"


def describe(error: BaseException) -> str:
    """The error's first line (AutotuneError: also the first configuration's), paths relative,
    addresses and byte offsets that change from run to run elided."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if type(error).__name__ == "AutotuneError" and len(lines) > 1:
        text += " " + lines[1]
    if isinstance(error, AssertionError):
        text = " ".join(lines[:4])
    text = text.replace(ROOT, "")
    text = re.sub(r"0x[0-9a-f]{6,}", "0x…", text)
    text = re.sub(r"byte offset \d{7,}", "byte offset …", text)
    return f"{type(error).__name__}: {text}"


def outcome(name: str, backend: str) -> str:
    tiles.set_backend(backend)
    try:
        load(name).check(np.random.default_rng(sum(map(ord, f"test_kernel[{backend}-{name}]"))))
        return "PASS"
    except Exception as error:
        return describe(error)
    finally:
        tiles.set_backend(None)


def main(argv: list[str]) -> None:
    backends = argv[0].split(",") if argv else ["interpreter"]
    as_dict = "--dict" in argv
    names = [a for a in argv[1:] if not a.startswith("--")]
    chosen = names[0].split(",") if names else kernel_names()
    failures: dict[str, dict[str, str]] = {}
    for name in chosen:
        for backend in backends:
            start = time.perf_counter()
            result = outcome(name, backend)
            print(f"{name:36s} {backend:11s} {time.perf_counter() - start:6.1f}s {result}", file=sys.stderr)
            if result != "PASS":
                failures.setdefault(name, {})[backend] = result
    if as_dict:
        for name, by_backend in failures.items():
            if len(set(by_backend.values())) == 1 and len(by_backend) == len(backends):
                failures[name] = {"*": next(iter(by_backend.values()))}
        print("EXPECTED_FAILURES: dict[str, dict[str, str]] = {")
        for name, by_backend in failures.items():
            print(f"    {name!r}: {{")
            for backend, reason in by_backend.items():
                print(f"        {backend!r}: {reason!r},")
            print("    },")
        print("}")


if __name__ == "__main__":
    main(sys.argv[1:])
