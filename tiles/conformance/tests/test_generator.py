"""Generated programs: every one runs on the reference, and the richer statements do occur."""

from __future__ import annotations

from hypothesis import HealthCheck, given, seed, settings

from tiles.conformance import backends as B
from tiles.conformance.generate.search import check, generated
from tiles.conformance.runner import PASSED

FEATURES = {
    "atomic, one address per lane": "_mem_ptr + offs",
    "atomic, contended": "cols * 0",
    "compare-and-swap": "tl.atomic_cas(",
    "strided load": "+ rows * ",
    "strides as arguments": "_sr + cols * ",
    "strided store": "tl.store(out_ptr + pid * (",
    "for inside for": "for jt in range(it, trips + 1):",
    "while inside for": "_k < it + flag + 1:",
    "spin lock": "while tl.atomic_cas(",
    "ticket": "_slots_ptr + ",
    "spin-wait on a flag": "_flag_ptr, volatile=True) == 0:",
    "scalar atomic in a loop": "    tl.atomic_add(",
    "float max/min of negatives": "= -tl.abs(tl.where(",
}


def test_generated_programs_run_on_the_reference_and_use_every_feature():
    reference = B.reference()
    seen: dict[str, int] = dict.fromkeys(FEATURES, 0)
    statuses: list[tuple[str, str]] = []
    for flavor in ("int", "float", "mixed"):
        @seed(11)
        @settings(max_examples=80, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(generated(flavor))
        def run(gen):
            source = gen.program.source()
            for feature, text in FEATURES.items():
                seen[feature] += text in source
            status, message = check(gen, reference, reference)
            if status != PASSED:
                statuses.append((status, message))
        run()
    assert not statuses, statuses[0][1]
    assert all(seen.values()), f"never generated: {[f for f, n in seen.items() if not n]}"


def test_ci_runs_no_generated_program_twice():
    """About a third of the programs ci drew repeated one already run (issue 31): a repeat is now
    rejected before it runs, so the family's programs are distinct (source and launch)."""
    from tiles.conformance.generate.search import program_key, search
    from tiles.conformance.profiles import CI
    reference = B.reference()
    for family in ("generated_int", "generated_float"):
        keys: list[str] = []

        def note(gen, keys=keys):
            keys.append(program_key(gen.program))
        outcomes = search(family, reference, reference, CI, seed=0, starting=note)
        assert len(keys) == len(set(keys)) == CI.generated_examples == len(outcomes)


def test_a_published_value_keeps_its_own_rule():
    # the ``publish`` sync statement stores a value for the other programs: an exp there is as
    # inexact in that buffer as in the output (OpenCL's exp, 1 ulp off, failed an exact rule)
    from tiles.conformance.compare import EXACT
    from tiles.conformance.generate.program import Node, Program
    from tiles.conformance.generate.search import output_rules
    from tiles.conformance.generate.sync import Sync
    from tiles.core import dtypes as D

    program = Program([], m=4, n=8, programs=4, output=Node("v7", D.float32, "MN"))
    program.syncs.append(Sync("v5", "publish", D.float32, ulps=4))
    program.syncs.append(Sync("v6", "publish", D.float32))
    names = program.params()
    rules = output_rules(program)
    assert rules[names.index("v5_pub_ptr")].kind == "ulp" and rules[names.index("v5_pub_ptr")].ulps == 4
    assert rules[names.index("v6_pub_ptr")] == EXACT and rules[names.index("v5_flag_ptr")] == EXACT
