"""The programs in examples/: each one's ``main`` checks itself against NumPy on the backend."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

from ..case import Case
from ..profiles import Profile

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"  # in a checkout (a wheel has none)
# smaller problem sizes for the ci profile (keyword arguments of each example's main)
CI_SIZES: dict[str, dict[str, Any]] = {
    "01_vector_add": {"n": 5000},
    "02_fused_softmax": {"n_rows": 17, "n_cols": 100},
    "03_matmul": {"m": 40, "n": 36, "k": 50},
    "04_low_memory_dropout": {"n": 4000},
    "05_layer_norm": {"m": 9, "n": 70},
    "06_fused_attention": {"z": 1, "h": 2, "n_ctx": 40, "head_dim": 16},
}


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tiles_example_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _runner(path: Path, sizes: dict[str, Any]):
    def run(backend: Any) -> None:
        main = _load(path).main
        accepted = inspect.signature(main).parameters
        main(**{k: v for k, v in sizes.items() if k in accepted}, backend=backend)
    return run


def _script(path: Path, sizes: dict[str, Any]) -> str:
    """The standalone run of one example (its reproducer): ``BACKEND`` is set above it."""
    return (f"import importlib.util\nimport inspect\n\n"
            f"spec = importlib.util.spec_from_file_location('example', {str(path)!r})\n"
            f"module = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(module)\n"
            f"accepted = inspect.signature(module.main).parameters\nsizes = {sizes!r}\n"
            f"module.main(**{{k: v for k, v in sizes.items() if k in accepted}}, backend=BACKEND)\n")


def example_cases(profile: Profile) -> list[Case]:
    out = []
    for path in sorted(EXAMPLES_DIR.glob("[0-9]*.py")):
        text = path.read_text()
        if "def main(" not in text or "backend" not in text:
            continue
        sizes = CI_SIZES.get(path.stem, {}) if profile.name == "ci" else {}
        out.append(Case("examples", path.stem, None, lambda rng: [], (1,), {},
                        self_check=_runner(path, sizes), self_check_script=_script(path, sizes)))
    return out
