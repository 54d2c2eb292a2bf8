"""Triton's ``reinterpret``: an array's memory seen as elements of another dtype."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes as D
from .specialize import TORCH_ALIASES
from .tensor_wrapper import TensorWrapper

_TORCH_NAMES = {tiles_name: torch_name for torch_name, tiles_name in TORCH_ALIASES.items()}
# torch's wide unsigned dtypes have no arithmetic ("add_stub" not implemented for 'UInt16'): a view
# as one could not be computed with, so these are wrapped as Triton does (``.base`` is the tensor)
_TORCH_WITHOUT_ARITHMETIC = frozenset({"uint16", "uint32", "uint64"})


def _element_type(dtype: Any) -> D.DType | None:
    """The tiles dtype named by ``dtype``: a tiles dtype, its name, a torch dtype (``torch.int8``,
    as Triton's tests pass) or a NumPy dtype; None when there is none."""
    if isinstance(dtype, D.DType):
        return dtype
    if type(dtype).__name__ == "dtype" and type(dtype).__module__ == "torch":
        name = str(dtype).removeprefix("torch.")
        return D.BY_NAME.get(TORCH_ALIASES.get(name, name))
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        try:
            return D.from_numpy(dtype)
        except TypeError:
            return None
    return D.BY_NAME.get(str(dtype))


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """A view of ``tensor``'s memory as ``dtype`` elements (e.g. a uint8 buffer as ``tl.float8e5``).

    Triton wraps the tensor and changes only the pointer type kernels see; tiles returns the
    array library's own view (NumPy's ``view`` with ml_dtypes, torch's ``view(dtype)``), which
    kernels, the interpreter and NumPy code all read the same way.  Views between element sizes
    follow the library's rules (the last axis must be contiguous and is rescaled).

    ``tl.float8e4b15`` has no NumPy, ml_dtypes or torch type: a NumPy array's bytes are viewed as
    ``dtypes.FP8E4B15_STORAGE`` (1-byte void, which NumPy cannot compute with; ``.view(np.uint8)``
    gives the bits back), a torch tensor is wrapped in a ``TensorWrapper``, as Triton does; so is one
    seen as uint16/32/64, types torch has but cannot compute with."""
    if isinstance(tensor, TensorWrapper):
        if _element_type(dtype) is None:
            raise TypeError(f"reinterpret: {dtype!r} is not an element dtype (use tl.float8e5, tl.uint8, ...)")
        tensor = tensor.base
    target = _element_type(dtype)
    if target is None:
        raise TypeError(f"reinterpret: {dtype!r} is not an element dtype (use tl.float8e5, tl.uint8, ...)")
    if isinstance(tensor, np.ndarray):
        if target == D.float8e4b15 and tensor.dtype.itemsize != 1:
            raise TypeError(f"reinterpret: an array of {tensor.dtype} cannot be seen as float8e4b15 (one byte an "
                            "element); view it as np.uint8 first")
        return tensor.view(target.np)
    if type(tensor).__module__.startswith("torch"):
        import torch
        if target == D.float8e4b15 or target.name in _TORCH_WITHOUT_ARITHMETIC:
            return TensorWrapper(tensor, target)
        torch_dtype = getattr(torch, _TORCH_NAMES.get(target.name, target.name), None)
        if not isinstance(torch_dtype, torch.dtype):
            raise TypeError(f"reinterpret: this torch has no dtype for {target.name}")
        return tensor.view(torch_dtype)
    raise TypeError(f"reinterpret: expected a NumPy array or a torch tensor, got {type(tensor).__name__}")
