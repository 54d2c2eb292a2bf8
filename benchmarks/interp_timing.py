"""The timing rule the interpreter benchmarks share (interp_vs_triton.py, stepping_vs_triton.py).

One checked warm-up call (it traces, compiles, autotunes), then the median of ``repeats`` calls,
as wall-clock time and as CPU time of the process (the steadier one on a shared machine).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def time_launch(launch: Callable[[], object], check: Callable[[], object], repeats: int) -> list[float]:
    """[median wall-clock s, median CPU s, wall-clock s of the first (checked) call]."""
    first = time.perf_counter()
    launch()
    first = time.perf_counter() - first
    check()
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        launch()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return [statistics.median(walls), statistics.median(cpus), first]
