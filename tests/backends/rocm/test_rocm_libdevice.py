"""libdevice functions on ROCm, compile-only: functions with an LLVM spelling (rounding, ldexp,
classification, ilogb, bit counts...) compile to AMDGPU machine code with no call left; the
others need a device math library, which the ROCm backend does not link, and say so."""

import numpy as np
import pytest
from test_rocm_examples import CompileOnlyROCm

from tiles.backends.llvm import mathfn as llvm_math
from tiles.conformance.corpus import libdevice as corpus
from tiles.conformance.profiles import CI
from tiles.core import mathfns
from tiles.core.errors import UnsupportedError


class MachineCodeOnlyROCm(CompileOnlyROCm):
    """Stops before the link (no ld.lld needed): ir, llir, amdgcn."""

    name = "rocm-machine-code-only"

    def stages(self, options):
        stages = super().stages(options)
        stages.pop("hsaco")
        return stages


def _compile(case, arch):
    with np.errstate(all="ignore"):
        return case.kernel.warmup(*case.args(), backend=MachineCodeOnlyROCm(arch), **case.constexprs)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("case", corpus.cases(CI), ids=lambda c: c.name)
def test_libdevice_on_amdgpu(case, arch):
    fns = [mathfns.FUNCTIONS[n] for n in case.constexprs["NAMES"]]
    if all(llvm_math.spelling(f) for f in fns):
        asm = _compile(case, arch).asm["amdgcn"]
        assert "s_swappc" not in asm and "s_setpc" not in asm.split("s_endpgm")[0]  # no calls
    else:
        lacking = next(f.name for f in fns if not llvm_math.spelling(f))
        with pytest.raises(UnsupportedError, match=rf"libdevice\.{lacking} on \w+ is not supported on \w+: "
                                                   "no device math library"):
            _compile(case, arch)
