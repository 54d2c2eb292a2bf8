"""A worker process of an isolated run: ``python -m tiles.conformance.worker PLAN_FILE``.

It rebuilds the run's jobs from the pickled ``Plan``, then runs the job whose id arrives on
each stdin line and answers with JSON lines on its own channel (stdout as it was at start; the
kernels' and backends' own output goes to stderr):

* ``{"event": "ready"}`` once, after setting up;
* ``{"event": "start", "repro": PATH}`` before each generated program (the reproducer of the
  program about to run, so that a crash or hang is blamed on it);
* ``{"event": "outcome", "outcome": {...}}`` per result;
* ``{"event": "done"}`` when the job is finished.
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import sys
from typing import Any


def _channel() -> Any:
    """A private copy of stdout for the protocol; fd 1 then points at stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1)


def main(argv: list[str]) -> int:
    channel = _channel()
    faulthandler.enable()  # a crash leaves a Python traceback in the stderr the parent reports

    def send(**message: Any) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    from . import backends as B
    from .plan import jobs, run_job

    with open(argv[0], "rb") as f:
        plan = pickle.load(f)
    backend, reference = B.resolve(plan.backend), B.reference()
    work = {job.id: job for job in jobs(plan)}
    from .reproducer import repro_dir
    inflight = str(repro_dir() / f"inflight_{os.getpid()}.py")

    def starting(gen: Any) -> None:
        from .generate.search import write_reproducer
        send(event="start", repro=write_reproducer(gen, backend, inflight))

    send(event="ready")
    for line in sys.stdin:
        job = work[line.strip()]  # a KeyError (the corpus changed under the run) ends the worker: broken
        for outcome in run_job(job, plan, backend, reference, starting):
            send(event="outcome", outcome=outcome.to_json())
        send(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
