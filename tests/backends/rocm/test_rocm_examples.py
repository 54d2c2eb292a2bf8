"""Every example's kernels compile to linked AMDGPU code objects for gfx90a, gfx942 and gfx1100.

Each example's ``main`` runs against a ROCm backend whose launches only record the compiled
kernel (no AMD GPU here); the results are garbage, so the examples' own checks are ignored.
Every code object must hold the kernel's descriptor and use no scratch (no spills).
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tiles.backends.base import CompiledKernel, LaunchArg
from tiles.backends.rocm import ROCmBackend
from tiles.backends.rocm.codeobject import read_code_object

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("0*.py"))


class CompileOnlyROCm(ROCmBackend):
    name = "rocm-compile-only"

    def __init__(self, arch: str) -> None:
        self._arch = arch
        self.compiled: list[CompiledKernel] = []

    def arch(self) -> str:
        return self._arch

    def available(self) -> tuple[bool, str]:
        return True, ""

    def make_launcher(self, compiled, plan):
        return lambda grid, values: self.launch(compiled, grid, [])

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[LaunchArg]) -> None:
        self.compiled.append(compiled)


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx1100"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_kernels_link_for_amdgpu(linker, arch, path):
    spec = importlib.util.spec_from_file_location(f"rocm_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend = CompileOnlyROCm(arch)
    with np.errstate(all="ignore"):
        try:
            module.main(backend=backend)
        except AssertionError:
            pass  # outputs are not computed in compile-only mode
    assert backend.compiled, f"{path.name}: no kernel was compiled"
    for compiled in backend.compiled:
        code = read_code_object(compiled.asm["hsaco"])
        names = [k.name for k in code.kernels]
        assert names == [compiled.name], names
        info = code.kernels[0]
        resources = info.resources()
        assert resources.get("private_segment_fixed_size", 0) == 0, (compiled.name, resources)
        assert info.wavefront_size == (32 if arch == "gfx1100" else 64)
