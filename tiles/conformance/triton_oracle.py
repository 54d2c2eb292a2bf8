"""Triton as a second oracle: the same kernel text run by Triton (``--oracle triton``).

A conformance kernel is Python source that names its language through two module bindings,
``tiles`` (``@tiles.jit``) and ``tl`` (``tiles.language``).  Triton's language has the same
surface, so a kernel runs on Triton when the *same source text* is executed with those names
bound to ``triton`` and ``triton.language`` instead: ``triton_module_source`` writes only a
different import header (and maps module imports ``tiles.X`` to ``triton.X``, e.g.
``tiles.language.extra.libdevice``); the body is not touched.  The text comes from where the
suite already keeps it: a generated program's ``Program.source()`` and, for a curated case,
``reproducer.inline_source`` (the kernel with its jit helpers and constants).

Where no GPU is present Triton's CPU interpreter (``TRITON_INTERPRET=1``) runs it: NumPy
inputs become torch CPU tensors (bfloat16 and fp8 through their bit patterns), dtype
constexprs become ``triton.language`` dtypes, and the outputs come back as NumPy arrays of the
input's dtype.  With a GPU (``torch.cuda.is_available()``) compiled Triton runs it, with
``enable_fp_fusion=False`` like every launch of the suite.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

ORACLES = ("triton",)

_HEADER = "import triton as tiles  # noqa: F401\nimport triton.language as tl  # noqa: F401\n\n\n"
_IMPORT = re.compile(r"^(\s*import\s+)tiles((?:\.\w+)*)(\s+as\s+\w+\s*)$", re.MULTILINE)
_TILES_HEADER = re.compile(r"\A(\s*(import tiles(\.language)?( as \w+)?|from __future__ import \w+)\s*(#.*)?\n)*")

# ml_dtypes' narrow floats and the torch dtype of their bit pattern's width
_NARROW = {"bfloat16": ("bfloat16", np.uint16), "float8_e4m3fn": ("float8_e4m3fn", np.uint8),
           "float8_e5m2": ("float8_e5m2", np.uint8)}


class OracleUnavailable(Exception):  # noqa: N818  (reads as a state)
    pass


def unavailable_reason() -> str | None:
    """None when Triton and torch import here, else why not (and how to get them)."""
    try:
        import torch  # noqa: F401
        if not use_gpu():
            # before triton's first import: triton.language's own jit functions (tl.max, tl.randn,
            # ...) are decorated then, and must be interpreted functions too
            os.environ["TRITON_INTERPRET"] = "1"
        import triton  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return (f"--oracle triton needs Triton and torch importable in this Python ({sys.executable}): "
                f"{type(e).__name__}: {e}. Install them (pip install triton torch) or run the suite "
                "with a Python that has them, e.g. PYTHONPATH=<tiles checkout> /work/tvenv/bin/python -m conformance")
    return None


def check_available(oracle: str) -> None:
    if oracle not in ORACLES:
        raise OracleUnavailable(f"unknown oracle {oracle!r}; known: {', '.join(ORACLES)}")
    why = unavailable_reason()
    if why:
        raise OracleUnavailable(why)


def use_gpu() -> bool:
    """Compiled Triton when a CUDA device is present and TRITON_INTERPRET is not forced on."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def mode() -> str:
    return "compiled Triton (GPU)" if use_gpu() else "Triton's interpreter (TRITON_INTERPRET=1)"


def triton_module_source(kernel_text: str) -> str:
    """The module that runs ``kernel_text`` (tiles source) on Triton: the same text under a Triton
    import header; ``import tiles.X as Y`` lines become ``import triton.X as Y``."""
    body = _TILES_HEADER.sub("", kernel_text, count=1)
    body = _IMPORT.sub(lambda m: f"{m.group(1)}triton{m.group(2)}{m.group(3)}", body)
    return _HEADER + body


def load(kernel_text: str, folder: Path, name: str = "kernel") -> Any:
    """Import the Triton module of ``kernel_text`` from a file (Triton reads kernels' source) and
    return its ``name``."""
    check_available("triton")  # sets TRITON_INTERPRET before triton's first import
    text = triton_module_source(kernel_text)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    path = folder / "triton" / f"tri_{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text)
    module_name = f"tiles_conformance_triton_{digest}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
    return getattr(sys.modules[module_name], name)


def to_torch(value: Any, device: str) -> Any:
    """A NumPy array as a torch tensor with the same bits; a NumPy scalar as a Python number."""
    import torch
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        narrow = _NARROW.get(a.dtype.name)
        if narrow is not None:
            t = torch.from_numpy(a.view(narrow[1]).copy()).view(getattr(torch, narrow[0]))
        else:
            t = torch.from_numpy(a.copy())
        return t.to(device)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def to_numpy(value: Any, like: Any) -> Any:
    """A tensor back as a NumPy array of ``like``'s dtype (bit for bit)."""
    if not isinstance(like, np.ndarray):
        return like
    import torch
    t = value.detach().cpu()
    narrow = _NARROW.get(like.dtype.name)
    if narrow is not None:
        bits = t.view({np.uint16: torch.int16, np.uint8: torch.uint8}[narrow[1]]).numpy()
        return bits.view(narrow[1]).view(like.dtype).reshape(like.shape)
    return t.numpy().reshape(like.shape)


def constexpr_value(value: Any) -> Any:
    """A tiles dtype constexpr as Triton's dtype of the same name; other values unchanged."""
    from tiles.core.dtypes import DType
    if isinstance(value, DType):
        import triton.language as tl
        return getattr(tl, value.name)
    return value


def run(kernel_text: str, grid: tuple[int, ...], args: list[Any], constexprs: dict[str, Any],
        folder: Path, name: str = "kernel") -> list[Any]:
    """Launch the kernel on Triton with copies of ``args``; the arguments after the launch, with
    arrays as NumPy arrays again."""
    kernel = load(kernel_text, folder, name)
    device = "cuda" if use_gpu() else "cpu"
    tensors = [to_torch(a, device) for a in args]
    extra = {k: constexpr_value(v) for k, v in constexprs.items()}
    kernel[tuple(grid)](*tensors, **extra, enable_fp_fusion=False)
    if device == "cuda":
        import torch
        torch.cuda.synchronize()
    return [to_numpy(t, a) for t, a in zip(tensors, args)]


__all__ = ["ORACLES", "OracleUnavailable", "check_available", "load", "mode", "run",
           "triton_module_source", "unavailable_reason"]
