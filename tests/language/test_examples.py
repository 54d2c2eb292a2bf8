"""Every example in examples/ runs on each backend at small sizes and checks itself."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(filename: str):
    path = EXAMPLES / filename
    spec = importlib.util.spec_from_file_location(f"tiles_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("filename,sizes", [
    ("01_vector_add.py", {"n": 5000, "block": 256}),
    ("02_fused_softmax.py", {"n_rows": 37, "n_cols": 129}),
    ("03_matmul.py", {"m": 70, "n": 33, "k": 50}),
    ("04_low_memory_dropout.py", {"n": 4099, "p": 0.5}),
    ("05_layer_norm.py", {"m": 19, "n": 150}),
    ("06_fused_attention.py", {"z": 1, "h": 2, "n_ctx": 45, "head_dim": 16}),
])
def test_example(filename, sizes, backend):
    load_example(filename).main(**sizes, backend=backend)


def test_every_example_is_tested():
    names = {p.name for p in EXAMPLES.glob("[0-9]*.py")}
    assert names == {"01_vector_add.py", "02_fused_softmax.py", "03_matmul.py",
                     "04_low_memory_dropout.py", "05_layer_norm.py", "06_fused_attention.py"}
