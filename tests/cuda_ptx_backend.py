"""``cuda-ptx``: the CUDA backend's compilation without a GPU, for the test suites.

Every launch compiles through the CUDA backend's stages to PTX for sm_90a (assembled by ptxas
when it is on PATH), then the same traced IR runs on the interpreter, so a test's own assertions
still hold.  It catches CUDA lowering gaps (an ``UnsupportedError``, an LLVM or ptxas failure) on
a machine without a GPU; values the GPU computes need ``bash .ci/gpu tests``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tiles.backends import registry
from tiles.backends.cuda import CUDABackend

NAME = "cuda-ptx"


class PTXThenInterpret(CUDABackend):
    name = NAME
    assembled = 0  # launches whose PTX was built (and assembled, with ptxas)

    def available(self) -> tuple[bool, str]:
        return True, ""

    def arch(self) -> str:
        return "sm_90a"

    def make_launcher(self, compiled, plan):
        ptx = compiled.asm["ptx"]
        assert f".entry {compiled.name}" in ptx
        if shutil.which("ptxas"):
            with tempfile.TemporaryDirectory() as tmp:
                source, target = Path(tmp) / "k.ptx", Path(tmp) / "k.o"
                source.write_text(ptx)
                done = subprocess.run(["ptxas", "-arch=sm_90a", str(source), "-o", str(target)],
                                      capture_output=True, text=True)
            assert done.returncode == 0, f"ptxas refused {compiled.name}:\n{done.stderr[:2000]}"
        PTXThenInterpret.assembled += 1
        interpreter = registry.get("interpreter")
        return interpreter.make_launcher(interpreter.compile(compiled.ir, compiled.options), plan)


def register() -> None:
    registry.register(NAME, PTXThenInterpret())
