"""tiles kernels as torch custom ops: opaque to ``torch.compile`` (fullgraph), capturable in CUDA graphs.

``custom_op`` registers a Python function that launches tiles kernels as a
``torch.library`` custom op, together with its fake (shape-only) implementation, so
``torch.compile(fullgraph=True)`` traces through calls of it without a graph break and
without running the kernel.  Launches inside use the current torch stream (the capturing
one while a CUDA graph is captured) and, for torch CUDA tensors, do no host synchronization,
device allocation or host copy; the first launch of each specialization compiles, so run the
op once before capturing (``docs/torch.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the module is only useful with torch
        raise ImportError("tiles.integrations.torch needs PyTorch (pip install torch)") from e
    return torch


def custom_op(qualname: str, fn: Callable[..., Any] | None = None, *,
              mutates_args: str | Iterable[str], fake: Callable[..., Any] | None = None,
              device_types: str | Sequence[str] | None = None, schema: str | None = None) -> Any:
    """``torch.library.custom_op(qualname, mutates_args=...)`` for a function that launches tiles
    kernels, with ``fake`` registered as its fake implementation (``register_fake``).

    ``fake`` takes the op's arguments and returns empty tensors of the outputs' shapes and
    dtypes (``torch.empty_like(x)``); an op that returns nothing (it only writes the tensors
    named in ``mutates_args``) needs none.  Used as a decorator, with or without ``fn``::

        @custom_op("mylib::add", mutates_args=(), fake=lambda x, y: torch.empty_like(x))
        def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
            return out
    """
    torch = _torch()

    def register(function: Callable[..., Any]) -> Any:
        op = torch.library.custom_op(qualname, function, mutates_args=mutates_args,
                                     device_types=device_types, schema=schema)
        if fake is not None:
            op.register_fake(fake)
        return op
    return register(fn) if fn is not None else register


def capturing() -> bool:
    """Whether torch's current CUDA stream is capturing a CUDA graph now."""
    torch = _torch()
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    return bool(torch.cuda.is_current_stream_capturing())


__all__ = ["capturing", "custom_op"]
