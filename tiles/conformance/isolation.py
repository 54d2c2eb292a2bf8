"""Running jobs in worker processes, so that a crash or a hang costs one row, not the run.

``workers`` threads (``concurrent.futures``) each drive one worker process
(``worker.py``) and take jobs from a shared list in order.  A job whose worker dies (a
segfault, heap corruption, ``os._exit``) or stays silent longer than ``timeout`` seconds
(a hang) becomes a ``broken`` row naming the case and what happened, with a reproducer; the
worker is replaced and the run goes on.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tiles.backends.base import Backend

from .plan import Job, Plan, Progress
from .runner import BROKEN, Outcome

STARTUP_TIMEOUT = 300.0  # importing tiles and the backend, building the corpus


class WorkerDiedError(Exception):
    pass


def _python_path() -> str:
    """The folder holding the ``tiles`` this process runs (with its conformance suite), first."""
    here = [str(Path(__file__).resolve().parents[2])]
    rest = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys(here + ([rest] if rest else [])))


class Worker:
    def __init__(self, plan_file: str) -> None:
        self.log = tempfile.TemporaryFile()
        env = {**os.environ, "PYTHONPATH": _python_path()}
        self.proc = subprocess.Popen([sys.executable, "-m", "tiles.conformance.worker", plan_file],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=env)
        self.buffer = b""
        message = self.read(STARTUP_TIMEOUT)
        if message is None or message.get("event") != "ready":
            self.kill()
            raise WorkerDiedError(f"the worker did not start: {message}\n{self.stderr_tail()}")

    def send(self, job_id: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{job_id}\n".encode())
        self.proc.stdin.flush()

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next message; None after ``timeout`` seconds of silence; WorkerDiedError at its end."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerDiedError(self.death())
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def death(self) -> str:
        code = self.proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the worker process was killed by {name} (exit status {code})"
        return f"the worker process exited with status {code}"

    def stderr_tail(self, lines: int = 12) -> str:
        self.log.seek(0)
        text = self.log.read().decode(errors="replace").splitlines()[-lines:]
        return "\n".join("  | " + line for line in text)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _broken_row(job: Job, why: str, inflight: str, backend: Backend, examples_done: int) -> Outcome:
    """The row of a job whose worker crashed or hung, with the reproducer of what was running."""
    if job.case is not None:
        from .reproducer import write_case_reproducer
        try:
            repro = write_case_reproducer(job.case, job.case.args(), backend)
        except Exception as e:  # a case whose reproducer cannot be written is still reported
            repro = ""
            why += f"\n(no reproducer: {type(e).__name__}: {e})"
        return Outcome(job.family, job.case.name, BROKEN, why, repro, seed=job.case.seed)
    repro = ""
    if inflight and os.path.exists(inflight):
        from .reproducer import final_path
        repro = final_path(inflight)
        os.replace(inflight, repro)
    # the passed programs before it are not reported one by one: the search did not finish
    name = f"crashed program [{Path(repro).stem.rsplit('_', 1)[-1]}]" if repro else "search"
    kernel = ""
    if repro:
        text = Path(repro).read_text()
        kernel = "\nkernel:\n" + text.split("# ---- kernel\n", 1)[-1].split("# ---- end of kernel", 1)[0]
    return Outcome(job.family, name, BROKEN, why + kernel, repro)


def run_isolated(plan: Plan, work: list[Job], backend: Backend, workers: int, timeout: float,
                 progress: Progress | None) -> None:
    """Run every job of ``work`` in worker processes; each job's outcomes land in ``job.outcomes``."""
    with tempfile.NamedTemporaryFile("wb", suffix=".plan", delete=False) as f:
        pickle.dump(plan, f)
        plan_file = f.name
    lock = threading.Lock()
    pending = list(range(len(work)))[::-1]

    def report(job: Job, outcome: Outcome) -> None:
        with lock:
            job.outcomes.append(outcome)
            if progress:
                progress(outcome)

    def take() -> int | None:
        with lock:
            return pending.pop() if pending else None

    def drive() -> None:
        worker: Worker | None = None
        while (index := take()) is not None:
            job = work[index]
            start = time.perf_counter()
            inflight, done = "", 0
            try:
                if worker is None:
                    worker = Worker(plan_file)
                worker.send(job.id)
                while True:
                    message = worker.read(timeout)
                    if message is None:
                        raise WorkerDiedError(f"timed out: no result after {timeout:g} s (a hang?); "
                                         "the worker was killed")
                    if message["event"] == "start":
                        inflight = message["repro"]
                    elif message["event"] == "outcome":
                        report(job, Outcome.from_json(message["outcome"]))
                        done += 1
                    elif message["event"] == "done":
                        break
            except WorkerDiedError as e:
                tail = ""
                if worker is not None:
                    worker.kill()
                    tail = worker.stderr_tail()
                    worker.log.close()
                worker = None
                why = f"{e} while running {job.id} on {backend.name}" + (f"\nlast output:\n{tail}" if tail else "")
                row = _broken_row(job, why, inflight, backend, done)
                row.seconds = round(time.perf_counter() - start, 4)
                report(job, row)
        if worker is not None:
            worker.close()

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for future in [pool.submit(drive) for _ in range(max(1, workers))]:
                future.result()
    finally:
        os.unlink(plan_file)
