"""Running generated programs on both backends; Hypothesis shrinks a disagreement to a reproducer."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given, reject
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tiles.backends.base import Backend
from tiles.runtime.jit import JITFunction

from .. import reproducer
from ..compare import EXACT, MULTISET, Rule, compare, ulp
from ..profiles import Profile
from ..runner import BROKEN, FAILED, PASSED, UNSUPPORTED, Outcome, execute
from .inputs import launch_args
from .program import Program
from .strategies import programs
from .sync import rules as sync_rules

GENERATED_FAMILIES = ("generated_int", "generated_float", "generated_mixed")


class GeneratedMismatchError(AssertionError):
    pass


@dataclass
class Generated:
    program: Program
    args: list[Any]


@st.composite
def generated(draw: Any, flavor: str) -> Generated:
    program = draw(programs(flavor))
    return Generated(program, draw(launch_args(program)))


def load_kernel(program: Program) -> JITFunction:
    """Write the program's source to a file and import it (the tracer reads kernels' source)."""
    text = program.module_source()
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    path = reproducer.repro_dir() / "generated" / f"gen_{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text)
    name = f"tiles_conformance_gen_{digest}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].kernel


def output_rule(program: Program) -> Rule:
    rule = ulp(program.ulps) if program.ulps else EXACT
    if program.zero_sign_free:
        rule = Rule(rule.kind, rule.ulps, signed_zero=False)
    return rule


def output_rules(program: Program) -> dict[int, Rule]:
    """Argument position -> rule, for every buffer the kernel writes: the output, and each atomic's
    memory (fixed whatever the order) and old values (per row as a multiset when contended)."""
    names = program.params()
    rules = {names.index("out_ptr"): output_rule(program)}
    for a in program.atomics:
        rules[names.index(f"{a.name}_mem_ptr")] = EXACT
        rules[names.index(f"{a.name}_old_ptr")] = MULTISET if a.contended else EXACT
    for param, rule in sync_rules(program).items():
        rules[names.index(param)] = rule
    return rules


def launch_of(program: Program) -> tuple[tuple[int, ...], dict[str, Any]]:
    """(grid, constexprs) a generated program runs with."""
    extra = {"num_warps": program.num_warps} if program.num_warps != 4 else {}
    return (program.programs,), {"M": program.m, "N": program.n, **extra}


def write_reproducer(gen: Generated, backend: Backend, path: str | None = None) -> str:
    grid, constexprs = launch_of(gen.program)
    return reproducer.write(f"generated on {backend.name}", gen.program.source(), gen.args, grid,
                            constexprs, output_rules(gen.program), {}, backend, path=path)


def program_key(program: Program) -> str:
    """What makes two drawn programs the same run: the source and the launch (not the inputs)."""
    return f"{program.source()}{launch_of(program)}"


def digest(program: Program) -> str:
    return hashlib.sha1(program.source().encode()).hexdigest()[:10]


# A second oracle's check of one generated program (``oracle.oracle_generated``): (program, kernel,
# status, reference's args after, backend's args after, backend, reference, outcome to fill).
GeneratedOracle = Callable[[Generated, JITFunction, str, list[Any], list[Any], Backend, Backend, Outcome], None]


def check(gen: Generated, backend: Backend, reference: Backend, oracle: GeneratedOracle | None = None,
          row: Outcome | None = None) -> tuple[str, str]:
    """(status, message); the message of a failure holds the kernel source (the caller writes the
    reproducer: one per failure, not one per shrinking step).  With ``oracle`` the program also runs
    on it, which fills ``row``'s oracle fields."""
    program = gen.program
    kernel = load_kernel(program)
    grid, constexprs = launch_of(program)
    status, message, ref_args, got_args = execute(kernel, grid, gen.args, constexprs, backend, reference)
    if oracle is not None and row is not None:
        oracle(gen, kernel, status, ref_args, got_args, backend, reference, row)
    if status == PASSED:
        names = program.params()
        for index, rule in output_rules(program).items():
            mismatch = compare(ref_args[index], got_args[index], rule)
            if mismatch is not None:
                status, message = FAILED, f"output '{names[index]}': {mismatch}"
                break
        else:
            return PASSED, ""
    if status in (FAILED, BROKEN):
        message = f"{message}\nkernel:\n{program.source()}"
    return status, message


# called before each program runs with the program (a crash or hang after it is blamed on it)
Starting = Callable[[Generated], None]


def search(family: str, backend: Backend, reference: Backend, profile: Profile, seed: int = 0,
           starting: Starting | None = None, max_examples: int | None = None,
           oracle: GeneratedOracle | None = None) -> list[Outcome]:
    """Run ``profile.generated_examples`` programs drawn from ``seed`` (the same seed draws the same
    programs); a failure is shrunk and reported once, with one reproducer script.

    With ``oracle`` every program also runs on Triton; a disagreement with Triton is reported on
    the program's row with a reproducer, not shrunk, and the search goes on (so that a run sees
    every disagreement, known divergences included)."""
    flavor = family.removeprefix("generated_")
    outcomes: list[Outcome] = []
    last_failure: list[Any] = []
    drawn: set[str] = set()  # programs already run: a repeat is rejected (not counted, not run)

    @hypothesis_seed(seed)
    @profile.hypothesis_settings(max_examples)
    @given(generated(flavor))
    def run(gen: Generated) -> None:
        if not last_failure:  # while shrinking a failure, its own program must run again
            key = program_key(gen.program)
            if key in drawn:
                reject()
            drawn.add(key)
        if starting is not None:
            starting(gen)
        start = time.perf_counter()
        row = Outcome(family, "", PASSED) if oracle is not None else None
        status, message = check(gen, backend, reference, oracle, row)
        if status in (FAILED, BROKEN):
            last_failure[:] = [status, message, gen]
            raise GeneratedMismatchError(message)
        if not last_failure:
            name = f"example {len(outcomes) + 1} [{digest(gen.program)}]"
            outcome = Outcome(family, name, status, message, seconds=round(time.perf_counter() - start, 4))
            if row is not None:
                outcome.oracle, outcome.oracle_message = row.oracle, row.oracle_message
                outcome.oracle_reproducer = row.oracle_reproducer
            outcomes.append(outcome)

    try:
        run()
    except GeneratedMismatchError:
        status, message, gen = last_failure
        repro = write_reproducer(gen, backend)
        outcomes.append(Outcome(family, "shrunk counterexample", status,
                                f"{message}reproducer: {repro}", repro))
    return outcomes


__all__ = ["GENERATED_FAMILIES", "UNSUPPORTED", "check", "generated", "search"]
