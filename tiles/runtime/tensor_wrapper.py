"""Triton's ``TensorWrapper``: what ``reinterpret`` gives for a torch tensor whose new element type
torch has no dtype for (``tl.float8e4b15``) or none it computes with (uint16/32/64)."""

from __future__ import annotations

from typing import Any

from ..core import dtypes as D


class TensorWrapper:
    """A torch tensor's memory seen as elements of a tiles dtype torch has no type for
    (``tl.float8e4b15``), as Triton's ``TensorWrapper``: ``base`` is the tensor (its bytes are the
    elements), ``dtype`` the tiles dtype.  Kernels take it as a pointer to ``dtype``; on the host,
    read or write the elements through ``base`` (a uint8/int8 tensor of the raw bytes)."""

    tiles_tensor_wrapper = True  # how the layers below runtime/ recognise one (backends/interpreter.py)

    def __init__(self, base: Any, dtype: D.DType) -> None:
        if base.element_size() != dtype.itemsize:
            raise TypeError(f"reinterpret: a tensor of {base.dtype} ({base.element_size()} bytes an element) "
                            f"cannot be seen as {dtype.name} ({dtype.itemsize} byte); view it as torch.uint8 first")
        self.base = base
        self.dtype = dtype
        self.data = base
        self.device = base.device
        self.shape = base.shape

    def data_ptr(self) -> int:
        return int(self.base.data_ptr())

    def get_device(self) -> int:
        return int(self.base.get_device())

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def size(self, *args: Any) -> Any:
        return self.base.size(*args)

    def dim(self) -> int:
        return int(self.base.dim())

    def numel(self) -> int:
        return int(self.base.numel())

    def element_size(self) -> int:
        return self.dtype.itemsize

    def is_contiguous(self) -> bool:
        return bool(self.base.is_contiguous())

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device: Any) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def copy_(self, other: TensorWrapper) -> TensorWrapper:
        self.base.copy_(other.base)
        return self

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def new_empty(self, sizes: Any) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __len__(self) -> int:
        return len(self.base)

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype.name}]({self.base!r})"
