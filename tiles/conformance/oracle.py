"""The three-way verdict of a case with a second oracle: tiles' interpreter vs Triton vs the backend.

Every curated case and generated program that ran on the interpreter (and the backend under
test) also runs on Triton (``triton_oracle.run``, the same kernel text); its outputs are compared
with the interpreter's, and with the backend's when the backend is not the interpreter, under the
case's own rules (``compare.py``, bounds and checkers included: the same tolerances as the
backend comparison).  A disagreement that a known divergence explains (Triton's interpreter
differs from compiled Triton, Triton leaves the result undefined, or Triton rejects a program
tiles accepts: ``triton_divergences.py``) is ``known`` and names the entry; any other is
``differs``: tiles (or the backend) is wrong until shown otherwise.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import triton_oracle
from .compare import compare as compare_arrays
from .reproducer import inline_source, render, repro_dir
from .runner import BROKEN, PASSED, compare_outputs, copy_args, launch, op_dtypes
from .triton_divergences import Evidence, explain

AGREES, DIFFERS, KNOWN, NOT_RUN = "agrees", "differs", "known", "not run"
ORACLE_STATUSES = (AGREES, DIFFERS, KNOWN, NOT_RUN)

# (args after run a, args after run b) -> "" when every output matches its rule, else what differs
Comparer = Callable[[list[Any], list[Any]], str]


def verdict(kernel_text: str, grid: tuple[int, ...], inputs: list[Any], constexprs: dict[str, Any],
            ref_args: list[Any], got_args: list[Any] | None, backend_name: str, compare: Comparer,
            evidence: Evidence, folder: Path) -> tuple[str, str, list[Any] | None]:
    """(status, message, Triton's args after the launch or None when it raised).

    ``got_args`` is None when the backend under test is the interpreter itself (or did not run):
    then only the interpreter is compared with Triton."""
    try:
        tri_args = triton_oracle.run(kernel_text, grid, inputs, constexprs, folder)
    except Exception as e:
        text = "".join(traceback.format_exception_only(type(e), e)).strip()
        evidence.triton_error = text
        message = f"Triton raised (tiles' interpreter ran it): {text}"
        known = explain(evidence)
        if known is not None:
            return KNOWN, f"{known.name}: {message}", None
        return DIFFERS, message, None
    problems = []
    ref_vs = compare(ref_args, tri_args)
    if ref_vs:
        problems.append("interpreter vs Triton:\n" + ref_vs)
    if got_args is not None:
        got_vs = compare(tri_args, got_args)
        if got_vs:
            problems.append(f"Triton vs {backend_name}:\n" + got_vs)
        problems.append(_summary(bool(ref_vs), bool(got_vs), not compare(ref_args, got_args), backend_name))
    if not ref_vs and (got_args is None or not got_vs):
        return AGREES, "", tri_args
    message = "\n".join(p for p in problems if p)
    evidence.mismatch = message
    known = explain(evidence)
    if known is not None:
        return KNOWN, f"{known.name}: {message}", tri_args
    return DIFFERS, message, tri_args


def _summary(ref_differs: bool, got_differs: bool, ref_is_got: bool, backend_name: str) -> str:
    if ref_differs and got_differs:
        return f"(the interpreter and {backend_name} agree: Triton stands alone)" if ref_is_got else \
            f"(the interpreter, Triton and {backend_name} all differ)"
    if ref_differs:
        return f"({backend_name} agrees with Triton: the interpreter stands alone)"
    if got_differs:
        return f"(the interpreter agrees with Triton: {backend_name} stands alone)"
    return ""


def write_reproducer(script: str) -> str:
    """A conformance reproducer (``reproducer.render``) turned into interpreter-vs-Triton: the same
    kernel text runs with ``TILES_INTERPRET=1`` and, through ``triton_oracle``, on Triton."""
    return script.replace(_TILES_RUN, _TRITON_RUN).replace("BACKEND = ", "BACKEND = 'triton'  # was ", 1)


_TILES_RUN = '''    del os.environ["TILES_INTERPRET"]
    got = make_inputs()
    kernel[GRID](*got, **CONSTEXPRS, backend=BACKEND, enable_fp_fusion=False)
'''
_TRITON_RUN = '''    del os.environ["TILES_INTERPRET"]
    # the same kernel text, with tiles / tl bound to triton / triton.language (Triton's interpreter
    # without a GPU): run this script with a Python where triton and torch import
    import pathlib
    import tempfile

    from tiles.conformance import triton_oracle
    text = pathlib.Path(__file__).read_text().split("# ---- kernel\\n", 1)[1].split("# ---- end of kernel", 1)[0]
    got = triton_oracle.run(text, GRID, make_inputs(), CONSTEXPRS, pathlib.Path(tempfile.gettempdir()))
'''


def folder() -> Path:
    return repro_dir()


def oracle_case(case: Any, inputs: list[Any], status: str, ref_args: list[Any], got_args: list[Any],
                backend: Any, reference: Any, outcome: Any) -> None:
    """Run a curated case on Triton and set ``outcome.oracle*`` (the case's own rules compare)."""
    if status == BROKEN:
        outcome.oracle, outcome.oracle_message = NOT_RUN, "the interpreter did not run it"
        return
    if not ref_args:  # the backend declared it unsupported before the interpreter ran
        ref_args = copy_args(inputs)
        try:
            launch(case.kernel, case.grid, ref_args, case.constexprs, reference)
        except Exception as e:
            outcome.oracle, outcome.oracle_message = NOT_RUN, f"the interpreter raised: {e}"
            return
    three_way = backend.name != reference.name and status in (PASSED, "failed") and bool(got_args)
    text = inline_source(case.kernel)

    def compare(a: list[Any], b: list[Any]) -> str:
        return compare_outputs(case, inputs, a, b)

    evidence = Evidence(case.id, set(op_dtypes(case.kernel, inputs, case.constexprs)), text, inputs=inputs)
    outcome.oracle, outcome.oracle_message, _ = verdict(
        text, case.grid, inputs, case.constexprs, ref_args, got_args if three_way else None, backend.name,
        compare, evidence, folder())
    if outcome.oracle == DIFFERS:
        bounds = case.bounds(inputs) if case.bounds else {}
        outcome.oracle_reproducer = save_reproducer(
            render(f"{case.id} on triton", text, inputs, case.grid, case.constexprs, case.outputs, bounds,
                   reference, "{path}"))


def save_reproducer(script: str) -> str:
    """Write an interpreter-vs-Triton reproducer (``script`` from ``reproducer.render`` with the
    file name ``{path}``); returns its path."""
    import hashlib
    text = write_reproducer(script)
    path = folder() / f"repro_triton_{hashlib.sha1(text.encode()).hexdigest()[:10]}.py"
    path.write_text(text.replace("{path}", str(path)))
    return str(path)


def oracle_generated(gen: Any, kernel: Any, status: str, ref_args: list[Any], got_args: list[Any],
                     backend: Any, reference: Any, outcome: Any) -> None:
    """Run a generated program on Triton and set ``outcome.oracle*`` (the program's output rules)."""
    from .generate.search import launch_of, output_rules  # (the generators need hypothesis)
    program = gen.program
    if status == BROKEN or not ref_args:
        outcome.oracle, outcome.oracle_message = NOT_RUN, "the interpreter did not run it"
        return
    grid, constexprs = launch_of(program)
    rules = output_rules(program)
    names = program.params()

    def compare(a: list[Any], b: list[Any]) -> str:
        problems = []
        for index, rule in rules.items():
            mismatch = compare_arrays(a[index], b[index], rule)
            if mismatch is not None:
                problems.append(f"output '{names[index]}': {mismatch}")
        return "\n".join(problems)

    three_way = backend.name != reference.name and status in (PASSED, "failed") and bool(got_args)
    text = program.source()
    evidence = Evidence(f"{outcome.family}/program", set(op_dtypes(kernel, gen.args, constexprs)), text,
                        inputs=gen.args)
    outcome.oracle, message, _ = verdict(text, grid, gen.args, constexprs, ref_args,
                                         got_args if three_way else None, backend.name, compare, evidence,
                                         folder())
    outcome.oracle_message = f"{message}\nkernel:\n{text}" if outcome.oracle == DIFFERS else message
    if outcome.oracle == DIFFERS:
        outcome.oracle_reproducer = save_reproducer(
            render(f"{outcome.family} on triton", text, gen.args, grid, constexprs, rules, {}, reference, "{path}"))
