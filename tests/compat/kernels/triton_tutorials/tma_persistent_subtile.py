"""Triton tutorial 09's persistent matmul on *host* tensor descriptors, the form vLLM's and
SGLang's TMA GEMMs copy: ``TensorDescriptor.from_tensor(x, [1, 1])`` made with a dummy block shape
that an autotune ``pre_hook`` replaces (``nargs["a_desc"].block_shape = [BM, BK]``, the C block
halved when ``EPILOGUE_SUBTILE``), ``c_desc.dtype`` read in the kernel, B given N-major and used as
``b.T`` in ``tl.dot(a, b.T, accumulator)`` (accumulator positional), a persistent
``tl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE)`` loop with
a second tile counter for the epilogue (``tile_id_c += NUM_SMS``), a ``_compute_pid`` helper
returning a tuple, and the subtiled epilogue ``tl.reshape(acc, (BM, 2, BN // 2))`` ->
``tl.permute(acc, (0, 2, 1))`` -> ``tl.split`` with two descriptor stores.  The grid is a lambda of
``META`` capped at the SM count from the driver; M, N, K are not multiples of the blocks."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.tools.tensor_descriptor import TensorDescriptor


def _set_block_size_hook(nargs):
    BLOCK_M, BLOCK_N, BLOCK_K = nargs["BLOCK_SIZE_M"], nargs["BLOCK_SIZE_N"], nargs["BLOCK_SIZE_K"]
    nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]
    nargs["b_desc"].block_shape = [BLOCK_N, BLOCK_K]
    if nargs.get("EPILOGUE_SUBTILE", False):
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N // 2]
    else:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N]


@tiles.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@tiles.autotune(configs=[tiles.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2},
                                      num_warps=4, num_stages=3, pre_hook=_set_block_size_hook)],
                key=["M", "N", "K", "WARP_SPECIALIZE"])
@tiles.jit
def matmul_kernel_descriptor_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                        BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                        GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                                        NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    dtype = c_desc.dtype
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N
        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


def _aligned(shape, dtype):
    """A zero array whose first element is 16-byte aligned, as a TMA descriptor needs."""
    raw = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize + 16, np.uint8)
    skip = -raw.__array_interface__["data"][0] % 16
    return raw[skip:skip + raw.size - 16].view(dtype).reshape(shape)


def check(rng):
    M, N, K = 77, 72, 40
    a = _aligned((M, K), np.float16)
    b = _aligned((N, K), np.float16)
    a[...] = rng.standard_normal((M, K))
    b[...] = rng.standard_normal((N, K))
    expected = a.astype(np.float64) @ b.astype(np.float64).T
    driver = tiles.runtime.driver
    NUM_SMS = driver.active.utils.get_device_properties(driver.active.get_current_device())["multiprocessor_count"]
    NUM_SMS = min(NUM_SMS, 3)
    for subtile in (False, True):
        c = _aligned((M, N), np.float16)
        c[...] = np.nan
        dummy = [1, 1]
        a_desc = TensorDescriptor.from_tensor(a, dummy)
        b_desc = TensorDescriptor.from_tensor(b, dummy)
        c_desc = TensorDescriptor.from_tensor(c, dummy)

        def grid(META):
            return (min(NUM_SMS, tiles.cdiv(M, META["BLOCK_SIZE_M"]) * tiles.cdiv(N, META["BLOCK_SIZE_N"])),)

        matmul_kernel_descriptor_persistent[grid](a_desc, b_desc, c_desc, M, N, K, EPILOGUE_SUBTILE=subtile,
                                                  NUM_SMS=NUM_SMS, WARP_SPECIALIZE=False)
        close(c, expected, rtol=2e-3, atol=2e-2)
