"""Host-side microscaling (OCP MX) helpers on torch tensors, as ``triton.tools.mxfp``: 4-bit E2M1
elements (``MXFP4Tensor``) and 8-bit E8M0 power-of-two scales (``MXScaleTensor``), for building
inputs and references of ``tl.dot_scaled`` kernels (Triton's block-scaled matmul tutorial).

E2M1: one sign bit, two exponent bits (bias 1), one mantissa bit; magnitudes 0, 0.5, 1, 1.5, 2,
3, 4, 6; no Inf or NaN.  From float: round to nearest, ties to the even code, magnitudes past 6
saturate to 6 (so do infinities); NaN has no encoding and is refused.  E8M0: the value is
2 ** (code - 127); code 255 is NaN.  From float: floor(log2(x)) + 127 clamped to 0..254; zero,
negative, infinite and NaN values become 255.  torch is imported only when these are used.
"""

from __future__ import annotations

from typing import Any

E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # by the code's low three bits
E8M0_BIAS = 127
E8M0_NAN = 255


def _torch() -> Any:
    import torch
    return torch


def _shape(size: Any) -> tuple[int, ...]:
    return tuple(size) if isinstance(size, (tuple, list)) else (int(size),)


class PackingDimensionError(ValueError, AssertionError):
    """``to_packed_tensor`` given a dimension the tensor does not have: a ValueError, and the
    AssertionError Triton's own ``MXFP4Tensor`` raises there (its tests catch that)."""


class MXFP4Tensor:
    """E2M1 values, one per uint8 code in ``data`` (sign in bit 3): ``MXFP4Tensor(float_tensor)``
    converts, ``MXFP4Tensor(size=..., device=...).random()`` draws every code uniformly."""

    def __init__(self, data: Any = None, size: Any = None, device: Any = None) -> None:
        self.device = device
        if data is not None:
            torch = _torch()
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"MXFP4Tensor(data=...) takes a torch tensor of floats, not {type(data).__name__}")
            self.device, self.size = data.device, tuple(data.shape)
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("MXFP4Tensor needs data= (a float tensor) or size=")

    def random(self) -> MXFP4Tensor:
        torch = _torch()
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The values as float32 (the only dtype offered, as Triton's)."""
        torch = _torch()
        if dtype != torch.float32:
            raise ValueError(f"MXFP4Tensor.to: only torch.float32, not {dtype}")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        magnitude = table[(self.data & 7).long()]
        return torch.where((self.data & 8) != 0, -magnitude, magnitude)

    def _from_float(self, values: Any) -> Any:
        torch = _torch()
        values = values.to(torch.float32)
        if bool(torch.isnan(values).any()):
            raise ValueError("MXFP4Tensor: E2M1 has no NaN encoding; the data holds NaN")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=values.device)
        distance = (values.abs().clamp(max=6.0).unsqueeze(-1) - table).abs()
        nearest = distance == distance.min(dim=-1, keepdim=True).values
        even = torch.tensor([2, 1] * 4, dtype=torch.int32, device=values.device)  # ties go to even codes
        code = (nearest.to(torch.int32) * even).argmax(dim=-1).to(torch.uint8)
        return code | (torch.signbit(values).to(torch.uint8) << 3)

    def to_packed_tensor(self, dim: int) -> Any:
        """Two codes per byte along ``dim`` (element 2i in the low nibble, 2i+1 in the high one);
        an odd size is padded with a zero code."""
        torch = _torch()
        data = self.data
        if not 0 <= dim < data.ndim:
            raise PackingDimensionError(f"to_packed_tensor: dim {dim} is not a dimension of a {data.ndim}-d tensor")
        if data.shape[dim] % 2:
            pad = list(data.shape)
            pad[dim] = 1
            data = torch.cat([data, torch.zeros(pad, dtype=data.dtype, device=data.device)], dim=dim)
        pairs = data.unflatten(dim, (data.shape[dim] // 2, 2))
        return pairs.select(dim + 1, 0) | (pairs.select(dim + 1, 1) << 4)

    def unpack_packed_tensor(self, packed: Any, dim: int, original_shape: Any) -> Any:
        """The codes ``to_packed_tensor(dim)`` packed, cut back to ``original_shape[dim]``."""
        torch = _torch()
        both = torch.stack((packed & 0xF, (packed >> 4) & 0xF), dim=dim + 1).flatten(dim, dim + 1)
        return both.narrow(dim, 0, int(original_shape[dim])).to(torch.uint8)


class MXScaleTensor:
    """E8M0 scales, one uint8 code per element in ``data``: ``MXScaleTensor(float_tensor)``
    converts, ``MXScaleTensor(size=...).random(low, high)`` draws codes between those values."""

    def __init__(self, data: Any = None, size: Any = None, device: Any = None) -> None:
        self.device = device
        if data is not None:
            torch = _torch()
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"MXScaleTensor(data=...) takes a torch tensor of floats, not {type(data).__name__}")
            self.device, self.size = data.device, tuple(data.shape)
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("MXScaleTensor needs data= (a float tensor) or size=")

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Codes uniformly from log2(low) to log2(high) (whole range by default); never NaN."""
        import math
        torch = _torch()
        lo = 0 if low is None else max(0, int(math.log2(low)) + E8M0_BIAS)
        hi = E8M0_NAN - 1 if high is None else min(E8M0_NAN - 1, max(0, int(math.log2(high)) + E8M0_BIAS))
        if lo > hi:
            raise ValueError(f"MXScaleTensor.random: low={low} is above high={high}")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The scales as float32: 2 ** (code - 127), NaN for code 255."""
        torch = _torch()
        if dtype != torch.float32:
            raise ValueError(f"MXScaleTensor.to: only torch.float32, not {dtype}")
        values = torch.pow(2.0, self.data.to(torch.float32) - E8M0_BIAS)
        return torch.where(self.data == E8M0_NAN, torch.tensor(float("nan"), device=self.data.device), values)

    def _from_float(self, values: Any) -> Any:
        torch = _torch()
        values = values.to(torch.float32)
        invalid = ~torch.isfinite(values) | (values <= 0)
        exponent = torch.floor(torch.log2(torch.where(invalid, torch.ones_like(values), values)))
        code = (exponent + E8M0_BIAS).clamp(0, E8M0_NAN - 1).to(torch.uint8)
        return torch.where(invalid, torch.full_like(code, E8M0_NAN), code)
