"""``triton.testing``'s NVIDIA helpers that libraries import (served as ``triton.testing`` names in the
compatibility mode, ``tiles/as_triton/testing.py``) (``nvsmi``, ``get_dram_gbps``,
``get_max_tensorcore_tflops``, ``get_max_simd_tflops``): peak figures for roofline estimates
and autotuning pruning, from the device properties of ``tiles.runtime.driver`` and the same
per-SM-subcore throughput model as Triton's (ops per clock per subcore, four subcores per SM,
by compute capability and dtype).  On a backend without such properties (the interpreter,
OpenCL) the figures come from what the driver reports and mean little."""

from __future__ import annotations

import subprocess
from typing import Any


def nvsmi(attrs: list[str]) -> list[int]:
    """``nvidia-smi --query-gpu=<attrs>`` of GPU 0, as ints (FileNotFoundError without nvidia-smi)."""
    query = ",".join(attrs)
    out = subprocess.check_output(["nvidia-smi", "-i", "0", f"--query-gpu={query}",
                                   "--format=csv,noheader,nounits"]).decode()
    return [int(v) for v in out.strip().split(",")]


def _properties(device: Any) -> dict[str, Any]:
    from .driver import driver
    active = driver.active
    dev = active.get_current_device() if device is None else device
    return dict(active.utils.get_device_properties(dev))


def _capability() -> int:
    from .driver import driver
    arch = driver.active.get_current_target().arch
    return arch if isinstance(arch, int) else 80


def get_dram_gbps(device: Any = None) -> float:
    """Peak DRAM bandwidth in GB/s: memory clock (kHz) x bus width (bits) x 2 (DDR) / 8."""
    props = _properties(device)
    return float(props.get("mem_clock_rate", 0)) * float(props.get("mem_bus_width", 0)) * 2 / 1e6 / 8


def _dtype_name(dtype: Any) -> str:
    return str(getattr(dtype, "name", dtype)).replace("torch.", "")


def get_max_tensorcore_tflops(dtype: Any, clock_rate: float, device: Any = None) -> float:
    """Peak tensor-core TFLOPS at ``clock_rate`` kHz for operands of ``dtype``."""
    subcores = _properties(device).get("multiprocessor_count", 1) * 4
    name = _dtype_name(dtype)
    if _capability() < 80:
        per_subcore = 256
    elif name in ("float32", "int32"):
        per_subcore = 256
    elif name in ("float16", "bfloat16", "int16"):
        per_subcore = 512
    elif name in ("int8", "float8e4nv", "float8e4b15", "float8e5", "float8_e4m3fn", "float8_e5m2"):
        per_subcore = 1024
    else:
        raise RuntimeError(f"dtype not supported: {dtype}")
    return float(subcores * clock_rate * per_subcore * 1e-9)


def get_max_simd_tflops(dtype: Any, clock_rate: float, device: Any = None) -> float:
    """Peak non-tensor-core TFLOPS at ``clock_rate`` kHz for ``dtype``."""
    subcores = _properties(device).get("multiprocessor_count", 1) * 4
    name = _dtype_name(dtype)
    if name not in ("float32", "float16", "bfloat16"):
        raise RuntimeError(f"dtype not supported: {dtype}")
    per_subcore = 32 if name == "float32" else 64
    return float(subcores * clock_rate * per_subcore * 1e-9)
