"""Every libdevice function on OpenCL against the interpreter, within the function's documented
bound (the conformance corpus's libdevice family: a few kernels, each applying many functions)."""

import pytest

from tiles.backends import registry
from tiles.backends.opencl import mathfns as opencl_math
from tiles.conformance.corpus import libdevice as corpus
from tiles.conformance.profiles import CI
from tiles.conformance.runner import PASSED, UNSUPPORTED, run_case
from tiles.core import dtypes as D
from tiles.core import mathfns

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

CASES = corpus.cases(CI)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_libdevice_group_on_opencl(case):
    names = case.constexprs["NAMES"]
    outcome = run_case(case, registry.get("opencl"), registry.get("interpreter"))
    dtype = case.args()[0].dtype
    if not any(opencl_math.available(mathfns.FUNCTIONS[n], D.from_numpy(dtype)) for n in names):
        # no OpenCL C builtin: a clear refusal naming the function, never a wrong answer
        assert outcome.status == UNSUPPORTED, outcome.message
        assert "not supported on opencl" in outcome.message and names[0] in outcome.message
    else:
        assert outcome.status == PASSED, outcome.message
