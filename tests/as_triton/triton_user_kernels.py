"""Kernels and host code written for Triton, as its users write them (the fused-softmax and
vector-add tutorials, Liger-Kernel's libdevice import fallbacks, an autotuned kernel, a
host-side tensor descriptor).  Importable only with the Triton compatibility mode installed."""

import numpy as np
import triton
import triton.language as tl
from triton.runtime import driver

try:
    from triton.language.extra.libdevice import rsqrt
except ModuleNotFoundError:
    from triton.language.extra.cuda.libdevice import rsqrt
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_ptr = in_ptr + row_idx * in_row_stride
        offs = tl.arange(0, BLOCK_SIZE)
        row = tl.load(row_ptr + offs, mask=offs < n_cols, other=-float("inf"))
        row = row - tl.max(row, axis=0)
        num = tl.exp(row)
        tl.store(out_ptr + row_idx * out_row_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x: np.ndarray) -> np.ndarray:
    n_rows, n_cols = x.shape
    y = np.empty_like(x)
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    programs = min(n_rows, props["multiprocessor_count"])
    softmax_kernel[(programs,)](y, x, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, n_rows, n_cols,
                                BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])
@triton.jit
def rms_scale_kernel(x_ptr, out_ptr, n, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * rsqrt(x * x + eps), mask=offs < n)


def rms_scale(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.empty_like(x)
    rms_scale_kernel[lambda meta: (triton.cdiv(x.size, meta["BLOCK"]),)](x, out, x.size, eps)
    return out


@triton.jit
def tile_copy_kernel(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    tl.static_assert(in_desc.block_shape == [BM, BN])
    tile = in_desc.load([pm * BM, pn * BN])
    out_desc.store([pm * BM, pn * BN], tile * 2)


def tile_double(x: np.ndarray, bm: int = 8, bn: int = 16) -> np.ndarray:
    out = np.zeros_like(x)
    grid = (triton.cdiv(x.shape[0], bm), triton.cdiv(x.shape[1], bn))
    tile_copy_kernel[grid](TensorDescriptor.from_tensor(x, [bm, bn]), TensorDescriptor.from_tensor(out, [bm, bn]),
                           bm, bn)
    return out
