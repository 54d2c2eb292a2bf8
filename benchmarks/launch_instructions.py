"""Instructions per cached launch on the CPU, counted by valgrind (deterministic on a shared machine).

Wall-clock figures from ``cuda_launch_path_stub.py`` swing by 2x on the shared 2-core VM; this
counts the instructions one ``kernel[grid](...)`` launch executes over the stand-in libcuda
(``tests/backends/cuda/libcuda_stub.c``), the same rows as that script.  It runs itself under
``valgrind --tool=callgrind`` with instrumentation off while Python starts and the kernels compile,
switches it on (``callgrind_control -i on``) once the launches are warm, and collects only
inside ``functools.reduce``, which runs the N launches.  Reported: instructions per launch less
those of an empty loop step.  ``--torch`` uses real torch CPU tensors in the launcher's stub mode
(see ``cuda_launch_path_stub.py``).  Needs valgrind and a C compiler.

    python benchmarks/launch_instructions.py [--torch] [-n 2000] [--rows add,eight,default,stream,grid,alternate,nohot]

Rows: ``add`` (5 arguments, ``backend="cuda"``), ``eight`` (8 arguments, 2 constexprs), ``default``
(no ``backend=``), ``stream`` (``stream=7``), ``grid`` (a grid function), ``alternate`` (``add`` with
an aligned and an unaligned ``x`` in turn: two keys), ``nohot`` (``add`` with the native hot launch
switched off: the Python launch function and the direct launch).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))


def child(row: str, n: int, torch_mode: bool, library: str, ready: str, go: str) -> None:
    """Under valgrind: warm one row's launches, signal, wait, then run n of them in reduce."""
    import cuda_launch_path_stub as stub
    torch = stub.use_real_torch() if torch_mode else stub.install_fake_torch()
    from launch_kernels_cpu import add_kernel, eight_args

    from tiles.backends.cuda import runtime
    from tiles.backends.cuda.driver import Driver, load_library
    runtime.use_driver(Driver(load_library(library)))
    if torch_mode:
        x, y, out = (torch.empty(1024) for _ in range(3))
    else:
        x, y, out = (stub.FakeTensor(0x10000 * (i + 1), torch.float32) for i in range(3))
    xs = (x, torch.empty(1025)[1:] if torch_mode else stub.FakeTensor(0x10004, torch.float32))  # two keys
    os.environ["TILES_BACKEND"] = "cuda"

    def grid(meta):
        return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
    rows = {
        "add": lambda _a, _b: add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, backend="cuda"),
        "eight": lambda _a, _b: eight_args[(4,)](x, y, out, 1024, 1000, 1e-5, BLOCK=1024, RELU=True,
                                                 backend="cuda"),
        "default": lambda _a, _b: add_kernel[(1,)](x, y, out, 1024, BLOCK=1024),
        "stream": lambda _a, _b: add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, backend="cuda", stream=7),
        "grid": lambda _a, _b: add_kernel[grid](x, y, out, 1024, BLOCK=1024, backend="cuda"),
        "alternate": lambda _a, i: add_kernel[(1,)](xs[i & 1], y, out, 1024, BLOCK=1024, backend="cuda"),
        "nohot": lambda _a, _b: add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, backend="cuda"),
        "empty": lambda _a, _b: None,
    }
    step = rows[row]
    if row == "nohot":  # the Python launch function alone (hot_launch.enabled = False)
        from tiles.backends.cuda.launch import hot_launch
        hot_launch.enabled = False
    for i in range(6):
        step(None, i)
    Path(ready).write_text(str(os.getpid()))
    while not os.path.exists(go):
        time.sleep(0.05)
    functools.reduce(step, range(n), None)


def count(row: str, n: int, torch_mode: bool, library: str, work: Path) -> int:
    ready, go = work / f"ready.{row}", work / f"go.{row}"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
               "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, "--child", row, "-n", str(n), "--library", library,
               "--ready", str(ready), "--go", str(go)] + (["--torch"] if torch_mode else [])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while not ready.exists():
        if process.poll() is not None:
            sys.exit(f"{row}: the run under valgrind ended early:\n{process.stdout.read()}")  # type: ignore[union-attr]
        time.sleep(0.2)
    subprocess.run(["callgrind_control", "-i", "on", ready.read_text()], check=True, capture_output=True)
    go.touch()
    output, _ = process.communicate()
    found = re.search(r"Collected : (\d+)", output)
    if found is None:
        sys.exit(f"{row}: no count in valgrind's output:\n{output}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--rows", default="add,eight,default,stream")
    parser.add_argument("--child")
    parser.add_argument("--library")
    parser.add_argument("--ready")
    parser.add_argument("--go")
    opts = parser.parse_args()
    if opts.child:
        return child(opts.child, opts.n, opts.torch, opts.library, opts.ready, opts.go)
    work = Path(tempfile.mkdtemp())
    library = work / "libcuda_stub.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library),
                    str(ROOT.parent / "tests" / "backends" / "cuda" / "libcuda_stub.c")], check=True)
    empty = count("empty", opts.n, opts.torch, str(library), work) / opts.n
    print(f"{'torch CPU tensors (stub mode)' if opts.torch else 'fake tensors'}, {opts.n} launches per row")
    for row in opts.rows.split(","):
        per_launch = count(row, opts.n, opts.torch, str(library), work) / opts.n - empty
        print(f"{row:8s} {per_launch:9.0f} instructions per launch")
    return None


if __name__ == "__main__":
    main()
