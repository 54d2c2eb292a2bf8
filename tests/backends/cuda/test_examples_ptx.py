"""Every example's kernels compile to PTX for sm_90 (ptxas-checked when on PATH), no GPU needed.

Each example's ``main`` runs against a CUDA backend whose launches are recorded instead of
executed, so every kernel is traced and compiled exactly as a real run would; the results are
garbage, so the examples' own checks are expected to fail and are ignored here.
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tiles.backends.base import CompiledKernel, LaunchArg
from tiles.backends.cuda import CUDABackend, toolchain

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("0*.py"))


class CompileOnlyCUDA(CUDABackend):
    name = "cuda-compile-only"

    def __init__(self) -> None:
        self.compiled: list[CompiledKernel] = []

    def available(self) -> tuple[bool, str]:
        return True, ""

    def arch(self) -> str:
        return "sm_90"

    def make_launcher(self, compiled, plan):
        return lambda grid, values: self.launch(compiled, grid, [])

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[LaunchArg]) -> None:
        self.compiled.append(compiled)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_kernels_compile_to_ptx(path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend = CompileOnlyCUDA()
    with np.errstate(all="ignore"):
        try:
            module.main(backend=backend)
        except AssertionError:
            pass  # outputs are not computed in compile-only mode
    compiled = {c.name for c in backend.compiled}
    assert compiled, f"{path.name}: no kernel was compiled"
    for c in backend.compiled:
        assert ".entry " + c.name in c.asm["ptx"]
        if toolchain.ptxas_path():
            info = toolchain.ptxas_info(c.asm["ptx"], "sm_90")
            assert info.get("registers", 0) > 0, info
