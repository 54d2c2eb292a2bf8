"""Running one case on the reference interpreter and on the backend under test."""

from __future__ import annotations

import copy
import dataclasses
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tiles.backends.base import Backend
from tiles.core.errors import UnsupportedError
from tiles.core.ops import Op
from tiles.runtime.jit import JITFunction

from .case import Case, traced
from .compare import Rule, close, compare, tol
from .reproducer import write_case_reproducer, write_self_check_reproducer

PASSED, FAILED, UNSUPPORTED, BROKEN = "passed", "failed", "unsupported", "broken"


@dataclass
class Outcome:
    """``broken``: the reference itself failed, so the case says nothing about the backend."""

    family: str
    name: str
    status: str
    message: str = ""
    reproducer: str = ""
    seconds: float = 0.0
    seed: int | None = None  # the case's input seed (corpus cases)
    coverage: list[str] = field(default_factory=list)  # "op:dtype" of every instruction traced
    oracle: str = ""  # with a second oracle (--oracle triton): agrees, differs, known or not run
    oracle_message: str = ""
    oracle_reproducer: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def copy_args(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else copy.copy(a) for a in args]


def unsupported_reasons(kernel: JITFunction, args: list[Any], constexprs: dict[str, Any],
                        backend: Backend) -> list[str]:
    """What ``backend`` declares it cannot run in this kernel (Target.unsupported_ops / dtypes)."""
    return backend.unsupported(traced(kernel, args, constexprs))


def op_dtypes(kernel: JITFunction, args: list[Any], constexprs: dict[str, Any]) -> list[str]:
    """``op:dtype`` for every instruction of the traced kernel (the result's element type, or the
    first operand's for ops without a result), for the coverage report."""
    seen = set()
    for instr in traced(kernel, args, constexprs).walk():
        values = instr.results or instr.operands
        element = getattr(getattr(values[0], "type", None), "element", None) if values else None
        if instr.op is Op.MATH_FN:
            op = f"math_fn.{instr.attrs.name}"
        elif instr.op in (Op.CAST, Op.BITCAST) and instr.operands:  # every source x destination pair
            op = f"{instr.op.value}.{getattr(instr.operands[0].type, 'element', '?')}"
        elif isinstance(getattr(instr.attrs, "kind", None), str):  # reduce.sum, atomic.add, ...
            op = f"{instr.op.value}.{instr.attrs.kind}"
        else:
            op = instr.op.value
        seen.add(f"{op}:{element}" if element is not None else op)
    return sorted(seen)


def declared_rule(rule: Rule, dtype: np.dtype, ops: set[Op | str], backend: Backend) -> Rule:
    """``rule`` loosened by what ``backend`` declares about approximate float32 ops in the kernel
    (Target.approximate); outputs of other dtypes keep ``rule``."""
    if dtype != np.float32:
        return rule
    for op, rtol, atol in backend.target().approximate:
        if op in ops:
            rule = rule.loosest(tol(rtol, atol))
    return rule


def launch(kernel: JITFunction, grid: tuple[int, ...], args: list[Any], constexprs: dict[str, Any],
           backend: Backend) -> None:
    # the suite checks the IR's semantics: a * b + c rounds twice (no contraction, as the interpreter)
    kernel[grid](*args, **constexprs, backend=backend, enable_fp_fusion=False)


def execute(kernel: JITFunction, grid: tuple[int, ...], args: list[Any], constexprs: dict[str, Any],
            backend: Backend, reference: Backend) -> tuple[str, str, list[Any], list[Any]]:
    """Run on both; (status, message, reference args after, backend args after).

    Status is ``passed`` when both ran (comparing is the caller's job)."""
    try:
        reasons = unsupported_reasons(kernel, args, constexprs, backend)
    except Exception as e:
        return BROKEN, f"tracing failed: {type(e).__name__}: {e}", [], []
    if reasons:
        return UNSUPPORTED, "; ".join(dict.fromkeys(reasons)), [], []
    ref_args = copy_args(args)
    try:
        launch(kernel, grid, ref_args, constexprs, reference)
    except Exception as e:
        return BROKEN, f"the reference interpreter failed: {type(e).__name__}: {e}", [], []
    got_args = copy_args(args)
    try:
        launch(kernel, grid, got_args, constexprs, backend)
    except UnsupportedError as e:
        return UNSUPPORTED, str(e), ref_args, []
    except Exception as e:
        tb = traceback.format_exception_only(type(e), e)
        return FAILED, f"{backend.name} raised: {''.join(tb).strip()}", ref_args, []
    return PASSED, "", ref_args, got_args


def compare_outputs(case: Case, inputs: list[Any], ref_args: list[Any], got_args: list[Any],
                    backend: Backend | None = None) -> str:
    """Empty when every output matches its rule (loosened by ``backend``'s declared
    approximations), else a description of each mismatch."""
    assert case.kernel is not None
    problems = []
    bounds = case.bounds(inputs) if case.bounds else {}
    ops: set[Op | str] = set()
    if backend is not None and backend.target().approximate:
        instrs = list(traced(case.kernel, inputs, case.constexprs).walk())
        ops = {i.op for i in instrs} | {i.attrs.name for i in instrs if i.op is Op.MATH_FN}
    for index, rule in case.outputs.items():
        name = case.kernel.arg_names[index]
        if backend is not None:
            rule = declared_rule(rule, np.asarray(ref_args[index]).dtype, ops, backend)
        mismatch = compare(np.asarray(ref_args[index]), np.asarray(got_args[index]), rule,
                           bounds.get(index))
        if mismatch is not None:
            problems.append(f"output {name!r}: {mismatch}")
    if case.check is not None:
        why = case.check(inputs, ref_args, got_args)
        if why:
            problems.append(why)
    return "\n".join(problems)


def run_self_check(case: Case, backend: Backend) -> Outcome:
    assert case.self_check is not None
    try:
        case.self_check(backend)
    except UnsupportedError as e:
        return Outcome(case.family, case.name, UNSUPPORTED, str(e))
    except Exception as e:
        tb = traceback.format_exception_only(type(e), e)
        outcome = Outcome(case.family, case.name, FAILED, f"{backend.name}: {''.join(tb).strip()}")
        if case.self_check_script:
            outcome.reproducer = write_self_check_reproducer(case, backend)
        return outcome
    return Outcome(case.family, case.name, PASSED)


# A second oracle's check of one curated case (``oracle.oracle_case``): (case, inputs, status,
# reference's args after, backend's args after, backend, reference, outcome to fill).
CaseOracle = Callable[[Case, list[Any], str, list[Any], list[Any], Backend, Backend, "Outcome"], None]


def run_case(case: Case, backend: Backend, reference: Backend, oracle: CaseOracle | None = None) -> Outcome:
    """Run ``case`` on ``backend`` and ``reference`` and compare; with ``oracle``, also on it."""
    start = time.perf_counter()
    outcome = _run_case(case, backend, reference, oracle)
    outcome.seconds = round(time.perf_counter() - start, 4)
    outcome.seed = case.seed
    return outcome


def _run_case(case: Case, backend: Backend, reference: Backend, oracle: CaseOracle | None) -> Outcome:
    if case.self_check is not None:
        outcome = run_self_check(case, backend)
        if oracle is not None:
            outcome.oracle, outcome.oracle_message = "not run", "a self-checking program (checks itself against NumPy)"
        return outcome
    try:
        inputs = case.args()
    except Exception as e:
        return Outcome(case.family, case.name, BROKEN, f"making the inputs failed: {type(e).__name__}: {e}")
    if case.kernel is None:
        return Outcome(case.family, case.name, BROKEN, "the case has neither a kernel nor a self-check")
    status, message, ref_args, got_args = execute(case.kernel, case.grid, inputs, case.constexprs,
                                                  backend, reference)
    if status == PASSED:
        message = compare_outputs(case, inputs, ref_args, got_args, backend)
        status = FAILED if message else PASSED
    outcome = Outcome(case.family, case.name, status, message)
    if status != BROKEN and case.kernel is not None:
        outcome.coverage = op_dtypes(case.kernel, inputs, case.constexprs)
    if oracle is not None:
        oracle(case, inputs, status, ref_args, got_args, backend, reference, outcome)
    if status == FAILED:
        if got_args:  # a mismatch (not an exception): try smaller inputs first
            inputs = shrink_inputs(case, inputs, backend, reference)
        outcome.reproducer = write_case_reproducer(case, inputs, backend)
    return outcome


def _still_fails(case: Case, inputs: list[Any], backend: Backend, reference: Backend) -> bool:
    assert case.kernel is not None
    status, _, ref_args, got_args = execute(case.kernel, case.grid, inputs, case.constexprs, backend, reference)
    return status == PASSED and bool(compare_outputs(case, inputs, ref_args, got_args, backend))


def _plain(a: np.ndarray, value: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.full(a.shape, value, dtype=np.float64 if a.dtype.kind not in "biu" else np.int64).astype(a.dtype)


def shrink_inputs(case: Case, inputs: list[Any], backend: Backend, reference: Backend) -> list[Any]:
    """Inputs that still fail with as few unusual values as a few reruns find: each input array
    (not an output) becomes all 1s, then all 0s, except where an output differed; kept when the
    case still fails. A handful of launches, only for a failing case."""
    assert case.kernel is not None
    _, _, ref_args, got_args = execute(case.kernel, case.grid, inputs, case.constexprs, backend, reference)
    if not got_args:
        return inputs
    bad = None
    for index, rule in case.outputs.items():
        ref, got = np.asarray(ref_args[index]), np.asarray(got_args[index])
        if ref.shape == got.shape and ref.dtype == got.dtype:
            differs = ~close(ref, got, rule)
            if differs.any():
                bad = differs.reshape(-1)
                break
    current = inputs
    for position, value in enumerate(inputs):
        if not isinstance(value, np.ndarray) or position in case.outputs or value.size < 2:
            continue
        for plain in (1, 0):
            trial = copy_args(current)
            flat = trial[position].reshape(-1)
            keep = bad if bad is not None and bad.size == flat.size else np.zeros(flat.size, bool)
            flat[~keep] = _plain(flat, plain)[~keep]
            if _still_fails(case, trial, backend, reference):
                current = trial
                break
    return current
