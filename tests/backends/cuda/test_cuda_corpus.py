"""Conformance-corpus kernels compile to PTX for sm_90a without a GPU (and without tripping LLVM)."""

import numpy as np
import pytest
from test_examples_ptx import CompileOnlyCUDA

from tiles.backends.cuda import toolchain
from tiles.conformance import corpus
from tiles.conformance.profiles import CI, THOROUGH
from tiles.core.errors import UnsupportedError


class CompileOnlySm90a(CompileOnlyCUDA):
    def arch(self) -> str:
        return "sm_90a"


def _compile(cases):
    backend = CompileOnlySm90a()
    compiled, unsupported = [], []
    for case in cases:
        try:
            with np.errstate(all="ignore"):
                compiled.append(case.kernel.warmup(*case.args(), backend=backend, **case.constexprs))
        except UnsupportedError as e:
            unsupported.append(f"{case.id}: {e}")
    return compiled, unsupported


@pytest.mark.slow  # the whole corpus through llvmlite: 70 s on the shared 2-core machine
def test_ci_corpus_compiles_for_sm90a():
    cases = [c for c in corpus.all_cases(CI) if c.kernel is not None and c.self_check is None]
    compiled, unsupported = _compile(cases)
    assert len(compiled) >= 0.9 * len(cases), unsupported[:10]
    assert all(".entry " + c.name in c.asm["ptx"] for c in compiled)


@pytest.mark.parametrize("case_id", ["reduction/max[float16,128x8,axis=0]"])
def test_loop_vectorizer_cannot_abort_compilation(case_id):
    """LLVM 22's loop vectorizer aborted the process (a cost-model assertion) on this reduction;
    the GPU pipelines run without it (llvm/target.py)."""
    (case,) = [c for c in corpus.all_cases(THOROUGH) if c.id == case_id]
    (compiled,), _ = _compile([case])
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(compiled.asm["ptx"], "sm_90a").get("registers", 0) > 0
