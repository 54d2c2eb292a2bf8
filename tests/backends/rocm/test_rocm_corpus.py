"""The conformance corpus (ci profile) compiles to linked AMDGPU code objects for three targets.

Each case's kernel is compiled (not run: there is no AMD GPU) with its own arguments and
constexprs; every code object must be a valid AMDGPU ELF holding that kernel, without scratch.
A case the backend declares unsupported (UnsupportedError) is counted and reported, and may not
be more than a small share of the corpus.
"""

import time

import numpy as np
import pytest
from test_rocm_examples import CompileOnlyROCm

from tiles.backends.rocm.codeobject import read_code_object
from tiles.conformance import corpus
from tiles.conformance.profiles import CI
from tiles.core.errors import UnsupportedError


@pytest.mark.slow  # 273 s for gfx90a alone on the shared 2-core machine
@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx1100"])
def test_corpus_links_for_amdgpu(linker, arch):
    cases = [c for c in corpus.all_cases(CI) if c.kernel is not None and c.self_check is None]
    backend = CompileOnlyROCm(arch)
    unsupported: list[str] = []
    start = time.perf_counter()
    for case in cases:
        args = case.args()
        try:
            with np.errstate(all="ignore"):
                compiled = case.kernel.warmup(*args, backend=backend, **case.constexprs)
        except UnsupportedError as e:
            unsupported.append(f"{case.id}: {e}")
            continue
        code = read_code_object(compiled.asm["hsaco"])
        assert [k.name for k in code.kernels] == [compiled.name], case.id
        assert code.kernels[0].resources().get("private_segment_fixed_size", 0) == 0, case.id
    compiled_count = len(cases) - len(unsupported)
    print(f"{arch}: {compiled_count} corpus kernels linked, {len(unsupported)} unsupported, "
          f"{time.perf_counter() - start:.1f} s")
    kinds = sorted({u.split(": ", 1)[1][:80] for u in unsupported})
    print("unsupported:", kinds[:8])
    assert compiled_count >= 0.9 * len(cases), unsupported[:10]
