"""What the corpus tests share: which backends run here, loading a kernel module, comparisons."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np

from tiles.backends import registry

KERNELS = Path(__file__).resolve().parent / "kernels"
BACKENDS = ("interpreter", "opencl", "cuda")
BF16 = np.dtype(ml_dtypes.bfloat16)


def available_backends() -> list[str]:
    return [name for name in BACKENDS if registry.status(name)[0]]


def kernel_names() -> list[str]:
    """Every kernel module of the corpus as ``<project>/<name>``: one folder per source project
    (``flaggems``, ``liger``, ``vllm``...; ``triton_*`` for Triton's own tutorials, language and runtime)."""
    return sorted(p.relative_to(KERNELS).with_suffix("").as_posix() for p in KERNELS.glob("*/*.py")
                  if not p.stem.startswith("_"))


def load(name: str):
    """Import kernels/<project>/<name>.py fresh: an ImportError in it is the test's failure, not collection's."""
    path = KERNELS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"tiles_compat_{name.replace('/', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(actual, expected, rtol=1e-5, atol=1e-6):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype in (BF16, np.float16) or expected.dtype in (BF16, np.float16):
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
    if actual.dtype.kind in "iub" and expected.dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def stride(a: np.ndarray, dim: int) -> int:
    """torch's ``t.stride(dim)`` for a NumPy array: in elements."""
    return a.strides[dim] // a.itemsize


def refuses_pointers_from_integers() -> bool:
    """The default backend declares int_to_ptr unsupported: OpenCL on a GPU, whose buffers have no
    addresses to put in a table (a launch there must raise UnsupportedError)."""
    backend = registry.default()
    return backend.name == "opencl" and backend.is_gpu()
