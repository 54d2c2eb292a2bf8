"""Running generated programs on both backends; Hypothesis shrinks a disagreement to a reproducer."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tiles.backends.base import Backend
from tiles.runtime.jit import JITFunction

from .. import reproducer
from ..compare import EXACT, Rule, compare, ulp
from ..profiles import Profile
from ..runner import BROKEN, FAILED, PASSED, UNSUPPORTED, Outcome, execute
from .inputs import launch_args
from .program import Program
from .strategies import programs

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


def check(gen: Generated, backend: Backend, reference: Backend) -> tuple[str, str]:
    """(status, message); the message of a failure holds the kernel source and a reproducer path."""
    program = gen.program
    kernel = load_kernel(program)
    grid = (program.programs,)
    constexprs = {"M": program.m, "N": program.n}
    status, message, ref_args, got_args = execute(kernel, grid, gen.args, constexprs, backend, reference)
    out_index = len(program.inputs)
    rule = output_rule(program)
    if status == PASSED:
        mismatch = compare(ref_args[out_index], got_args[out_index], rule)
        if mismatch is None:
            return PASSED, ""
        status, message = FAILED, f"output 'out_ptr': {mismatch}"
    if status in (FAILED, BROKEN):
        path = reproducer.write(f"generated on {backend.name}", program.source(), gen.args, grid,
                                constexprs, {out_index: rule}, {}, backend)
        message = f"{message}\nkernel:\n{program.source()}reproducer: {path}"
    return status, message


def search(family: str, backend: Backend, reference: Backend, profile: Profile) -> list[Outcome]:
    """Run ``profile.generated_examples`` programs; a failure is shrunk and reported once."""
    flavor = family.removeprefix("generated_")
    outcomes: list[Outcome] = []
    last_failure: list[str] = []

    @profile.hypothesis_settings()
    @given(generated(flavor))
    def run(gen: Generated) -> None:
        status, message = check(gen, backend, reference)
        if status in (FAILED, BROKEN):
            last_failure[:] = [status, message]
            raise GeneratedMismatchError(message)
        if not last_failure:
            outcomes.append(Outcome(family, f"example {len(outcomes) + 1}", status, message))

    try:
        run()
    except GeneratedMismatchError:
        status, message = last_failure
        repro = message.rsplit("reproducer: ", 1)[-1].strip()
        outcomes.append(Outcome(family, "shrunk counterexample", status, message, repro))
    return outcomes


__all__ = ["GENERATED_FAMILIES", "UNSUPPORTED", "check", "generated", "search"]
