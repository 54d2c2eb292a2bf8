"""Triton's own language unit tests as a yardstick: the same cases on Triton's CPU interpreter
and on tiles (Triton compatibility mode, NumPy interpreter), side by side (issue 32).

Triton's tests are read from a git directory at run time (``git archive``) into a temporary
folder and never copied into this repository.  Each test file runs in its own pytest process per
side, under ``nice``, one process at a time; every case's outcome is appended to a results JSON
keyed by test id, so a later run resumes where this one stopped.

    python benchmarks/triton_unit_tests.py --git-dir /work/.mirror/OWNER+triton/repo --ref main \\
        --shard 1/16 --seed s1 --budget 3000          # run (resumes), then print the table
    python benchmarks/triton_unit_tests.py --report   # print the table of what has run

Sides: ``triton`` is ``TRITON_INTERPRET=1`` with the real Triton installed in ``--python``'s
environment; ``tiles`` is ``TILES_AS_TRITON=1`` with this worktree first on ``PYTHONPATH``
(``TRITON_INTERPRET=1`` there selects tiles' interpreter); ``tiles-opencl`` is the same with
``TILES_BACKEND=opencl`` and ``TILES_INTERPRET=0`` (so the mode does not map ``TRITON_INTERPRET=1``
to tiles' interpreter; the tests still see ``TRITON_INTERPRET=1`` and take their CPU paths): tiles'
OpenCL backend, on pocl here.  The plugin counts each case's launches per backend (``launches``),
so a case that ran on the interpreter instead shows.  All run with ``--device cpu``.

    python benchmarks/triton_unit_tests.py ... --sides tiles-opencl --subshard 1/4   # a sample of the shard
    python benchmarks/triton_unit_tests.py --report --side tiles-opencl   # Triton next to tiles' OpenCL
    python benchmarks/triton_unit_tests.py --report --files test_core.py --shard 1-2/16   # those cases only
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_RESULTS = HERE / "data" / "triton_unit_results.json"
DEFAULT_PYTHON = "/work/tvenv/bin/python"
SIDES = ("triton", "tiles", "tiles-opencl")
# tiles' sides: the environment each adds to the compatibility mode
TILES_SIDES = {"tiles": {}, "tiles-opencl": {"TILES_BACKEND": "opencl", "TILES_INTERPRET": "0"}}
PASS = ("passed", "xfail")
UNIT = "python/test/unit/language"


def extract(git_dir: str, ref: str, into: Path) -> Path:
    """``git archive`` Triton's language tests (and the conftest above them) into ``into``."""
    paths = [UNIT, "python/test/conftest.py"]
    have = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "--name-only", ref, "python/test/unit/conftest.py"],
                          capture_output=True, text=True, check=True).stdout.strip()
    if have:
        paths.append(have)
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", ref, *paths], capture_output=True, check=True)
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "python" / "test"


def in_shard(nodeid: str, shard: tuple[int, int], seed: str) -> bool:
    """Deterministic sample: case ``nodeid`` belongs to shard ``i`` of ``n`` by a hash of its id.
    (``--subshard`` hashes again with the seed ``<seed>:sub``, independent of the first.)"""
    i, n = shard
    digest = hashlib.sha256(f"{seed}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % n == i - 1


def parse_shards(text: str) -> list[tuple[int, int]]:
    """``i/n``, ``i-j/n`` (shards i to j) or ``i,k/n``: the shards of ``n`` to run."""
    which, n = text.split("/")
    out: list[tuple[int, int]] = []
    for part in which.split(","):
        lo, _, hi = part.partition("-")
        out += [(i, int(n)) for i in range(int(lo), int(hi or lo) + 1)]
    assert out and all(1 <= i <= int(n) for i, _ in out), text
    return out


def side_env(side: str, python: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILES_", "TRITON_", "UH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)] if side in TILES_SIDES else [str(HERE)])
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    if side in TILES_SIDES:
        env["TILES_AS_TRITON"] = "1"
        env["UH_INTERNAL_TESTING"] = internal_testing_path(python)
        env.update(TILES_SIDES[side])
    return env


def internal_testing_path(python: str) -> str:
    """Where the real Triton's test helpers are, read without importing Triton."""
    code = ("import importlib.util as u, os; "
            "print(os.path.join(os.path.dirname(u.find_spec('triton').origin), '_internal_testing.py'))")
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def plugin_is_registered(python: str) -> bool:
    """Whether tiles' pytest plugin loads by itself (its entry point is visible: tiles installed, or
    an editable checkout's metadata on PYTHONPATH); naming it again with -p would register it twice."""
    code = ("import importlib.metadata as m; "
            "print(any(e.name == 'tiles_as_triton' for e in m.entry_points(group='pytest11')))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=side_env("tiles", python))
    return out.stdout.strip() == "True"


def pytest_cmd(python: str, side: str, test_file: Path) -> list[str]:
    cmd = ["nice", "-n", "15", python, "-m", "pytest", "-p", "triton_unit_plugin", "-p", "no:cacheprovider",
           "-q", "-rN", "--no-header", "-o", "addopts=", "--device", "cpu", str(test_file)]
    if side in TILES_SIDES and not plugin_is_registered(python):
        cmd[6:6] = ["-p", "tiles_as_triton_pytest"]
    return cmd


def read_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def collect(python: str, tests: Path, test_file: str, work: Path) -> dict[str, str]:
    """Test ids of one file as Triton collects them, with the compiler-internals reason if any."""
    out = work / f"collect-{test_file}.jsonl"
    out.unlink(missing_ok=True)
    env = side_env("triton", python) | {"UH_OUT": str(out)}
    proc = subprocess.run(pytest_cmd(python, "triton", tests / "unit" / "language" / test_file) + ["--collect-only"],
                          cwd=tests, env=env, capture_output=True, text=True, timeout=900)
    ids = {r["collected"]: r.get("internals", "") for r in read_lines(out) if "collected" in r}
    if not ids and proc.returncode not in (0, 5):
        print(f"  collection of {test_file} failed:\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}", file=sys.stderr)
    return ids


def run_side(python: str, side: str, tests: Path, test_file: str, todo: list[str], work: Path,
             timeout: float, deadline: float) -> dict[str, dict[str, Any]]:
    """Run ``todo`` (ids of one file) on one side; restart after a crash; stop at ``deadline``."""
    done: dict[str, dict[str, Any]] = {}
    pending = list(todo)
    while pending and time.time() < deadline:
        select = work / f"select-{side}.txt"
        select.write_text("\n".join(pending) + "\n")
        out = work / f"out-{side}-{test_file}.jsonl"
        out.unlink(missing_ok=True)
        env = side_env(side, python) | {"UH_OUT": str(out), "UH_SELECT": str(select), "UH_TIMEOUT": str(timeout)}
        log = open(work / f"log-{side}.txt", "w")
        proc = subprocess.Popen(pytest_cmd(python, side, tests / "unit" / "language" / test_file), cwd=tests, env=env,
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        last_size, last_change = -1, time.time()
        stalled = False
        while proc.poll() is None:
            time.sleep(2)
            size = out.stat().st_size if out.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.time()
            if time.time() - last_change > timeout + 120 or time.time() > deadline + 60:
                stalled = True
                proc.kill()
                proc.wait()
        log.close()
        stderr = (work / f"log-{side}.txt").read_text(errors="replace")
        records = read_lines(out)
        for r in records[:1]:
            if "backend" in r:
                print(f"  {side}: tiles launches on {r['backend']}", flush=True)
        started = [r["start"] for r in records if "start" in r]
        finished = {r["nodeid"]: r for r in records if "nodeid" in r}
        done.update(finished)
        in_flight = [n for n in started if n not in finished]
        for nodeid in in_flight:
            why = "killed: no progress" if stalled else f"process died (exit {proc.returncode})"
            done[nodeid] = {"nodeid": nodeid, "outcome": "timeout" if stalled else "crash", "reason": why}
        if not started:  # nothing ran: the file does not import or collect on this side
            first = next((ln[1:].strip() for ln in stderr.splitlines() if ln.startswith("E ")), stderr.strip()[-300:])
            for nodeid in pending:
                done[nodeid] = {"nodeid": nodeid, "outcome": "error", "reason": f"not run: {first[:300]}"}
        pending = [n for n in pending if n not in done]
        if pending and not stalled and proc.returncode == 0:
            for nodeid in pending:  # collected by Triton, not by this side
                done[nodeid] = {"nodeid": nodeid, "outcome": "error", "reason": "not collected on this side"}
            pending = []
    return done


def load(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())
    return {"source": {}, "cases": {}}


def save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=0, sort_keys=True))
    tmp.replace(path)


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def _shape(reason: str) -> str:
    """A failure's first line with the case-specific parts (numbers, quoted names) masked."""
    text = re.sub(r"\S*/([\w.]+\.py):\d+ in [\w<>.]+: ", "", reason)  # the kernel's file:line
    text = re.sub(r"0x[0-9a-f]+", "0x…", text)
    text = re.sub(r"'[^']{0,80}'", "'…'", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:160]


def _internals_error(reason: str) -> str:
    """The compiler internal a failure shows the test reached for (IR text, FileCheck), if any."""
    m = re.search(r"triton\._filecheck|'asm'|\.asm\b|'(ttir|ttgir|llir|ptx)'|attribute 'compile'"
                  r"|_unsafe_update_src|attribute 'cache'", reason)
    return m.group(0) if m else ""


# Cases Triton's interpreter passes and tiles fails on purpose, by what tiles' failure says (or the
# test id): tiles does something else by design, or refuses a feature with a clear error.  Each
# has its reason; the report counts them apart from the gap.
LISTED: tuple[tuple[str, str], ...] = ()


def _listed(nodeid: str, reason: str) -> str:
    for pattern, why in LISTED:
        if re.search(pattern, nodeid) or re.search(pattern, reason):
            return why
    return ""


def _tally(row: Any, side: str, t: dict[str, Any], s: dict[str, Any]) -> None:
    """Count one case run on Triton's side (``t``) and on ``side`` (``s``) in a table row."""
    tp, sp = t["outcome"] in PASS, s["outcome"] in PASS
    row["cases"] += 1
    row["triton"] += tp
    row[side] += sp
    row["both"] += tp and sp
    row[side + "_only"] += sp and not tp
    row["both_skip"] += t["outcome"] == "skipped" and s["outcome"] == "skipped"


def report(data: dict[str, Any], top: int, not_run_ok: bool = True) -> str:
    """The per-file table and the grouped reasons Triton passes where tiles does not.  A case tiles
    passes whose Triton side was not run (``--triton-where-tiles-fails``) counts as a tiles pass
    with Triton "not run": it cannot be in the gap."""
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    gap: collections.Counter[str] = collections.Counter()
    internals: collections.Counter[str] = collections.Counter()
    listed: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    for nodeid, case in data["cases"].items():
        t, s = case.get("triton"), case.get("tiles")
        if s and not t and s["outcome"] in PASS and not_run_ok:
            t = {"outcome": "not run"}
        if not t or not s:
            continue
        row = rows[_file_of(nodeid)]
        tp, sp = t["outcome"] in PASS, s["outcome"] in PASS
        if t.get("outcome") == "not run":  # --triton-where-tiles-fails: tiles passes, Triton was not asked
            row["cases"] += 1
            row["tiles"] += 1
            row["not_run"] += 1
            continue
        _tally(row, "tiles", t, s)
        if tp and not sp:
            why = _internals_error(s.get("reason", ""))
            listed_why = _listed(nodeid, s.get("reason", ""))
            if why:
                row["internals"] += 1
                internals[why] += 1
            elif listed_why:
                row["listed"] += 1
                listed[listed_why] += 1
            else:
                row["gap"] += 1
                key = f"{s['outcome']}: {_shape(s.get('reason', ''))}"
                gap[key] += 1
                examples.setdefault(key, nodeid)
    cols = ["cases", "triton", "tiles", "both", "gap", "internals", "listed", "tiles_only", "both_skip", "not_run"]
    head = ("| file | cases | Triton pass | tiles pass | both pass | Triton-only (gap) | of which internals "
            "| of which listed differences | tiles-only | skipped on both | tiles pass, Triton not run |")
    head = head.replace("| cases |", "| collected | cases run |")
    lines = [head, "|" + " --- |" * (len(cols) + 2)]
    collected = data.get("collected", {})
    total: collections.Counter[str] = collections.Counter()
    def cells(row: collections.Counter[str]) -> str:
        return " | ".join(str(row[c] + (row["internals"] + row["listed"] if c == "gap" else 0)) for c in cols)

    for name in sorted(rows):
        total.update(rows[name])
        lines.append(f"| {name} | {collected.get(name, '?')} | {cells(rows[name])} |")
    lines.append(f"| **all** | {sum(collected.get(n, 0) for n in rows)} | {cells(total)} |")
    lines.append("")
    lines.append(f"Gap reasons (tiles' outcome and first error line, grouped), top {top}:")
    for key, count in gap.most_common(top):
        lines.append(f"- {count} × `{key}` (e.g. `{examples[key]}`)")
    if listed:
        lines.append("Listed differences in the gap (tiles differs on purpose or refuses clearly):")
        lines += [f"- {v} × {k}" for k, v in listed.most_common()]
    if internals:
        lines.append("Compiler-internals cases in the gap (the test's source reads these): "
                     + ", ".join(f"`{k}` {v}" for k, v in internals.most_common()))
    return "\n".join(lines)


# Cases Triton's interpreter passes and tiles' OpenCL backend fails, where the failure is a limit
# the backend states (a clear error before anything runs), by what the failure says.
OPENCL_LIMITS: tuple[tuple[str, str], ...] = (
    (r"(atomics|atomic_cas) on \w+ are not supported on opencl",
     "atomics on a type tiles' OpenCL backend cannot run (OpenCL C has them on 32- and 64-bit types; 16-bit "
     "ones run as a compare-and-swap loop on the 32-bit word), refused before anything runs"),
    (r"dtype float8e(4b8|5b16) is not supported on opencl",
     "the AMD fnuz float8 types (float8e4b8, float8e5b16) are not among the element types tiles' shared lowering "
     "handles (LOWERED_DTYPES): refused by name before anything runs; the interpreter runs them"),
    (r"dtype float8e4b15 is not supported on opencl",
     "Triton's bias-15 e4m3 (float8e4b15, which Triton itself drops on sm_90 and later) is an interpreter-only "
     "element type in tiles: every compiling backend refuses it by name before anything runs"),
    (r"no OpenCL (C )?builtin",
     "a libdevice function OpenCL C has no builtin for (Bessel functions...), refused by name before anything "
     "runs; the interpreter and CUDA run it"),
)


def _opencl_limit(reason: str) -> str:
    for pattern, why in OPENCL_LIMITS:
        if re.search(pattern, reason):
            return why
    return ""


def report_backend(data: dict[str, Any], side: str, top: int) -> str:
    """Triton's interpreter next to tiles' ``side`` (``tiles-opencl``) on the cases both ran, with
    tiles' interpreter's outcome beside it (a case the interpreter passes and the backend fails is
    the backend's), and the probe: cases whose launches went to tiles' interpreter, not the backend."""
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    gap: collections.Counter[str] = collections.Counter()
    limits: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    beyond: collections.Counter[str] = collections.Counter()
    beyond_fail: collections.Counter[str] = collections.Counter()
    backend = side.removeprefix("tiles-")
    for nodeid, case in data["cases"].items():
        t, s, i = case.get("triton"), case.get(side), case.get("tiles")
        if s and (not t or t.get("outcome") == "not run"):  # Triton not asked: next to tiles' interpreter only
            beyond[s["outcome"] if s["outcome"] in ("passed", "skipped") else "not passed"] += 1
            if i and i["outcome"] in PASS and s["outcome"] not in PASS:
                beyond_fail[f"{s['outcome']}: {_shape(s.get('reason', ''))}"] += 1
            continue
        if not t or not s:
            continue
        row = rows[_file_of(nodeid)]
        tp, sp, ip = t["outcome"] in PASS, s["outcome"] in PASS, bool(i) and i["outcome"] in PASS
        launches = s.get("launches", {})
        _tally(row, "side", t, s)
        row["interp_not_side"] += ip and not sp
        row["launched"] += launches.get(backend, 0) > 0
        row["on_interp"] += launches.get("interpreter", 0) > 0
        if tp and not sp:
            row["gap"] += 1
            why = _internals_error(s.get("reason", "")) or _listed(nodeid, s.get("reason", "")) \
                or _opencl_limit(s.get("reason", ""))
            if why:
                row["limit"] += 1
                limits[why] += 1
            else:
                key = f"{s['outcome']}: {_shape(s.get('reason', ''))}"
                gap[key] += 1
                examples.setdefault(key, nodeid)
    cols = ["cases", "triton", "side", "both", "gap", "limit", "side_only", "both_skip", "interp_not_side",
            "launched", "on_interp"]
    lines = [f"| file | cases run (both sides) | Triton pass | {side} pass | both pass | Triton-only (gap) "
             f"| of which stated limits | {side}-only | skipped on both | tiles' interpreter passes, {side} not "
             f"| cases that launched on {backend} | cases that launched on tiles' interpreter |",
             "|" + " --- |" * (len(cols) + 1)]
    total: collections.Counter[str] = collections.Counter()
    for name in sorted(rows):
        total.update(rows[name])
        lines.append(f"| {name} | " + " | ".join(str(rows[name][c]) for c in cols) + " |")
    lines.append("| **all** | " + " | ".join(str(total[c]) for c in cols) + " |")
    lines.append("")
    lines.append(f"Gap reasons ({side}'s outcome and first error line, grouped), top {top}:")
    lines += [f"- {n} × `{k}` (e.g. `{examples[k]}`)" for k, n in gap.most_common(top)]
    if limits:
        lines.append("Stated limits and listed differences in the gap:")
        lines += [f"- {n} × {k}" for k, n in limits.most_common()]
    if beyond:
        lines.append(f"Beyond the table, cases Triton's side did not run (tiles' interpreter passed them): "
                     f"{sum(beyond.values())} on {side}, " + ", ".join(f"{k} {v}" for k, v in sorted(beyond.items())))
        lines += [f"- tiles' interpreter passes, {side} not: {n} × `{k}`" for k, n in beyond_fail.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", help="a git directory holding Triton (e.g. a fetched mirror)")
    ap.add_argument("--ref", default="v3.9.0", help="tag, branch or commit of Triton's tests")
    ap.add_argument("--python", default=DEFAULT_PYTHON, help="a python with torch, pytest and the real Triton")
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    ap.add_argument("--files", nargs="*", help="test files to run (default: every test_*.py)")
    ap.add_argument("--shard", default="1/1",
                    help="i/n: the deterministic 1-in-n sample to run (i-j/n or i,k/n: several shards)")
    ap.add_argument("--seed", default="uh1", help="seed of the shard hash")
    ap.add_argument("--subshard", default="1/1",
                    help="i/n: of the cases in --shard, only those in this second 1-in-n hash sample "
                         "(seed '<seed>:sub'), e.g. a few hundred cases for a slow backend")
    ap.add_argument("--sides", nargs="*", default=list(SIDES), choices=SIDES)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one case may run")
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds of wall time for this run")
    ap.add_argument("--redo", nargs="*", default=[], choices=SIDES,
                    help="run these sides again on the chosen cases (after a fix), dropping their outcomes")
    ap.add_argument("--triton-where-tiles-fails", action="store_true",
                    help="run tiles' side first and Triton's only on the cases tiles does not pass (the "
                         "gap is found at a fraction of Triton's time; Triton's pass count is then a floor)")
    ap.add_argument("--redo-tiles-failures", action="store_true",
                    help="run tiles' side again where it failed or errored (after fixes), keeping its passes "
                         "and its timeouts")
    ap.add_argument("--report", action="store_true", help="only print the table of the results file")
    ap.add_argument("--side", default="tiles", choices=SIDES[1:],
                    help="the tiles side the table sets next to Triton's (default: tiles' interpreter)")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    data = load(args.results)
    show = (lambda: report(data, args.top)) if args.side == "tiles" else (
        lambda: report_backend(data, args.side, args.top))
    if args.report:
        if args.files or args.shard != "1/1" or args.subshard != "1/1":  # the table of those cases only
            shards, subs = parse_shards(args.shard), parse_shards(args.subshard)
            data["cases"] = {n: c for n, c in data["cases"].items()
                             if (not args.files or _file_of(n) in args.files)
                             and any(in_shard(n, sh, args.seed) for sh in shards)
                             and any(in_shard(n, sub, args.seed + ":sub") for sub in subs)}
        print(show())
        return
    if not args.git_dir:
        ap.error("--git-dir is needed to run")
    deadline = time.time() + args.budget
    shards = parse_shards(args.shard)
    subshards = parse_shards(args.subshard)
    sides = sorted(args.sides, key=lambda x: x != "tiles") if args.triton_where_tiles_fails else args.sides
    commit = subprocess.run(["git", "--git-dir", args.git_dir, "rev-parse", args.ref + "^{commit}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    if data["source"].get("commit") not in (None, commit):
        sys.exit(f"{args.results} holds results for commit {data['source']['commit']}, not {commit}")
    data["source"] = {"commit": commit, "ref": args.ref}
    with tempfile.TemporaryDirectory(prefix="triton-unit-") as tmp:
        work = Path(tmp)
        tests = extract(args.git_dir, commit, work / "src")
        files = args.files or sorted(p.name for p in (tests / "unit" / "language").glob("test_*.py"))
        for test_file in files:
            if time.time() > deadline:
                break
            ids = collect(args.python, tests, test_file, work)
            chosen = [n for n in ids if any(in_shard(n, shard, args.seed) for shard in shards)
                      and any(in_shard(n, sub, args.seed + ":sub") for sub in subshards)]
            data.setdefault("collected", {})[test_file] = len(ids)
            for nodeid in chosen:
                case = data["cases"].setdefault(nodeid, {})
                for side in args.redo:
                    case.pop(side, None)
                if args.redo_tiles_failures and case.get("tiles", {}).get("outcome") in ("failed", "error", "crash"):
                    case.pop("tiles")
                if ids[nodeid]:
                    case["internals"] = ids[nodeid]
            sub = f", subshard {args.subshard}" if args.subshard != "1/1" else ""
            print(f"{test_file}: {len(ids)} cases, {len(chosen)} in shard {args.shard}{sub} (seed {args.seed})",
                  flush=True)
            for side in sides:
                todo = [n for n in chosen if side not in data["cases"][n]]
                if side == "triton" and args.triton_where_tiles_fails:
                    todo = [n for n in todo if data["cases"][n].get("tiles", {}).get("outcome") not in PASS]
                if not todo or time.time() > deadline:
                    continue
                t0 = time.time()
                got = run_side(args.python, side, tests, test_file, todo, work, args.timeout, deadline)
                for nodeid, rec in got.items():
                    if nodeid in data["cases"]:
                        data["cases"][nodeid][side] = {k: rec[k] for k in ("outcome", "reason", "seconds", "launches")
                                                   if k in rec}
                save(args.results, data)
                print(f"  {side}: {len(got)}/{len(todo)} run in {time.time() - t0:.0f} s", flush=True)
    print(show())


if __name__ == "__main__":
    main()
