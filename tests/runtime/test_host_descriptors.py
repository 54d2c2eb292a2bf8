"""Host-side tensor descriptors (``tiles.tools.tensor_descriptor.TensorDescriptor``) as kernel
arguments, in the form of Triton's persistent-matmul and attention tutorials: descriptors made on
the host for A, B and C, ``desc.load``/``desc.store`` in the kernel.

Sizes are odd so blocks hang over every edge: the rows are padded with NaN, so a read outside
the descriptor's shape that is not zero-filled poisons the result, and a write outside it that
is not dropped shows in the padding.
"""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import CUDABackend, toolchain
from tiles.core.errors import CompilationError, KernelRuntimeError, LaunchError
from tiles.tools.tensor_descriptor import TensorDescriptor, TensorDescriptorError

OPENCL, OPENCL_WHY = registry.status("opencl")
M, N, K = 37, 45, 29
BM, BN, BK = 16, 32, 16


@tiles.jit
def matmul_host_desc(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@tiles.jit
def matmul_device_desc(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_bk, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@tiles.jit
def copy_host_desc(src, dst, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    dst.store([off_m, off_n], src.load([off_m, off_n]) * 2)


@tiles.jit
def matmul_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """The persistent tutorial's shape: each program walks output tiles with a stride."""
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True):
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(a_desc.load([off_m, ki * BLOCK_K]), b_desc.load([ki * BLOCK_K, off_n]), acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@tiles.jit
def _as_descriptor(desc_or_ptr, rows, cols: tl.constexpr, block_shape):
    """The attention tutorial's helper: a host descriptor is used as it is, a pointer wrapped."""
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    return tl.make_tensor_descriptor(desc_or_ptr, [rows, cols], [cols, 1], block_shape)


@tiles.jit
def scale_rows(x, out, rows, D: tl.constexpr, BLOCK: tl.constexpr):
    x_desc = _as_descriptor(x, rows, D, [BLOCK, D])
    out_desc = _as_descriptor(out, rows, D, [BLOCK, D])
    off = tl.program_id(0) * BLOCK
    tile = x_desc.load([off, 0])
    out_desc.store([off, 0], (tile * 3).to(out_desc.dtype))


def padded(rng, rows, cols, dtype, fill=np.nan):
    """A (rows, cols) random view into rows padded to a multiple of 16 elements with ``fill``."""
    buf = np.full((rows, -(-cols // 16) * 16 + 16), fill, dtype)
    view = buf[:, :cols]
    view[...] = rng.standard_normal((rows, cols))
    return buf, view


def aligned(shape, dtype):
    """A zero array whose first element is 16-byte aligned (NumPy does not promise it)."""
    raw = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize + 16, np.uint8)
    skip = -raw.__array_interface__["data"][0] % 16
    return raw[skip:skip + raw.size - 16].view(dtype).reshape(shape)


def operands(rng):
    _, a = padded(rng, M, K, np.float16)
    _, b = padded(rng, K, N, np.float16)
    c_buf, c = padded(rng, M, N, np.float32)
    c[...] = -7
    return a, b, c_buf, c


def grid(m=M, n=N):
    return (-(-m // BM), -(-n // BN))


def host_descs(a, b, c, bm=BM, bn=BN, bk=BK):
    return (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
            TensorDescriptor.from_tensor(c, [bm, bn]))


def run_host(a, b, c, backend, **kw):
    descs = (TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
             TensorDescriptor.from_tensor(c, [BM, BN]))
    return matmul_host_desc[grid()](*descs, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, backend=backend, **kw)


@pytest.mark.parametrize("backend", ["interpreter", "opencl"])
def test_tutorial_matmul_matches_numpy(rng, backend):
    if backend == "opencl" and not OPENCL:
        pytest.skip(f"no OpenCL device: {OPENCL_WHY}")
    a, b, c_buf, c = operands(rng)
    run_host(a, b, c, backend)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)
    assert np.isnan(c_buf[:, N:]).all(), "a write outside the descriptor's shape was not dropped"


def test_persistent_matmul(rng):
    a, b, c_buf, c = operands(rng)
    programs = 3
    matmul_persistent[(programs,)](*host_descs(a, b, c), M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                                   NUM_PROGRAMS=programs, backend="interpreter")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert np.isnan(c_buf[:, N:]).all()


def test_descriptor_or_pointer_helper(rng):
    """``isinstance(arg, tl.tensor_descriptor)`` is true for a host descriptor in the kernel, so the
    attention tutorial's helper takes descriptors and pointers alike, with the same result."""
    rows, d, block = 21, 32, 8
    x = rng.standard_normal((rows, d)).astype(np.float32)
    by_desc, by_ptr = np.zeros_like(x), np.zeros_like(x)
    launch = scale_rows[(-(-rows // block),)]
    launch(TensorDescriptor.from_tensor(x, [block, d]), TensorDescriptor.from_tensor(by_desc, [block, d]), rows,
           D=d, BLOCK=block, backend="interpreter")
    launch(x, by_ptr, rows, D=d, BLOCK=block, backend="interpreter")
    np.testing.assert_array_equal(by_desc, x * 3)
    np.testing.assert_array_equal(by_ptr, x * 3)


def test_host_and_device_descriptors_agree(rng):
    a, b, c_buf, c = operands(rng)
    run_host(a, b, c, "interpreter")
    c2_buf, c2 = padded(rng, M, N, np.float32, fill=np.nan)
    matmul_device_desc[grid()](a, b, c2, M, N, K, a.strides[0] // 2, b.strides[0] // 2, c2.strides[0] // 4,
                               BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, backend="interpreter")
    np.testing.assert_array_equal(c_buf, c2_buf)


def test_expanded_parameters_and_specialization(rng):
    """Block shape and dtype are part of the key; sizes and strides are run-time parameters
    (the last stride the constant 1); the base is a 16-byte-aligned pointer parameter."""
    a, b, c_buf, c = operands(rng)
    descs = (TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
             TensorDescriptor.from_tensor(c, [BM, BN]))
    text = matmul_host_desc.ir(*descs, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    header = text.splitlines()[0]
    assert "a_desc_base: ptr<float16> (div 16)" in header and "c_desc_base: ptr<float32> (div 16)" in header
    assert "a_desc_shape0: int32" in header and "a_desc_stride0: int32 (div 16)" in header
    assert "a_desc_stride1" not in header
    assert "desc_load" in text and "desc_store" in text
    before = len(matmul_host_desc.cache)
    args = (M, N, K)
    matmul_host_desc[grid()](*descs, *args, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, backend="interpreter")
    c[...] = 0
    matmul_host_desc[grid()](*descs, *args, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, backend="interpreter")
    assert len(matmul_host_desc.cache) <= before + 1  # the second launch reused the first's kernel
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    wider = TensorDescriptor.from_tensor(c, [BM, 2 * BN])
    matmul_host_desc[(grid()[0], -(-N // (2 * BN)))](descs[0], TensorDescriptor.from_tensor(b, [BK, 2 * BN]),
                                                      wider, *args, BLOCK_M=BM, BLOCK_N=2 * BN, BLOCK_K=BK,
                                                      backend="interpreter")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_block_shape_set_by_a_pre_hook(rng):
    """Triton's persistent-matmul tutorial makes descriptors with a dummy block shape and sets the
    real one in the autotuner's pre_hook."""
    def set_block_shape(nargs):
        nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
        nargs["b_desc"].block_shape = [nargs["BLOCK_K"], nargs["BLOCK_N"]]
        nargs["c_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]

    configs = [tiles.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 16}, pre_hook=set_block_shape)
               for bm, bn in ((16, 16), (32, 16))]
    tuned = tiles.autotune(configs, key=["M", "N", "K"])(tiles.jit(matmul_host_desc.fn))
    a, b, c_buf, c = operands(rng)
    dummy = [1, 1]
    descs = [TensorDescriptor.from_tensor(t, dummy) for t in (a, b, c)]
    tuned[lambda meta: (-(-M // meta["BLOCK_M"]), -(-N // meta["BLOCK_N"]))](*descs, M, N, K, backend="interpreter")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert np.isnan(c_buf[:, N:]).all()


@pytest.mark.parametrize("make,fragment", [
    (lambda x: TensorDescriptor(x, [8, 12], [12, 1], [8, 4]), "12 elements = 24 bytes, not a multiple of 16"),
    (lambda x: TensorDescriptor(x, [8, 12], [16, 1], [8]), "has 1 entries but the tensor has rank 2"),
    (lambda x: TensorDescriptor(x, [8, 12], [16, 1], [8, 12]), "block_shape[1] is 12; block sizes must be powers"),
    (lambda x: TensorDescriptor(x, [8, 12], [1, 8], [8, 4]), "the last stride must be 1"),
    (lambda x: TensorDescriptor(x, [0, 12], [16, 1], [8, 4]), "every size must be positive"),
    (lambda x: TensorDescriptor(x.reshape(-1)[1:], [100], [1], [16]), "not a multiple of 16 bytes"),
    (lambda x: TensorDescriptor.from_tensor(x[:, 1:], [8, 8]), "not a multiple of 16 bytes"),
    (lambda x: TensorDescriptor.from_tensor(x, [8, 8], padding="ones"), "padding 'ones': expected one of"),
])
def test_bad_descriptor_names_the_host_call(make, fragment):
    x = aligned((8, 16), np.float16)
    with pytest.raises(TensorDescriptorError) as info:
        make(x)
    message = str(info.value)
    assert fragment in message
    assert f"{__file__}:" in message  # the line that made it


def test_bad_block_shape_at_launch_names_the_kernel(rng):
    """A block shape set after construction (as a pre_hook does) is checked when launched."""
    a, b, c_buf, c = operands(rng)
    descs = [TensorDescriptor.from_tensor(t, [16, 16]) for t in (a, b, c)]
    descs[1].block_shape = [16, 24]
    with pytest.raises(LaunchError) as info:
        matmul_host_desc[grid()](*descs, M, N, K, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, backend="interpreter")
    message = str(info.value)
    assert "test_host_descriptors.py" in message and "matmul_host_desc" in message
    assert "'b_desc'" in message and "powers of two" in message


def test_rank_mismatch_in_the_kernel_names_its_line(rng):
    """A 1-D descriptor where the kernel indexes two axes."""
    flat = rng.standard_normal(64).astype(np.float32)
    src = TensorDescriptor.from_tensor(flat, [16])
    dst = TensorDescriptor.from_tensor(padded(rng, 8, 16, np.float32)[1], [8, 16])
    with pytest.raises(CompilationError) as info:
        copy_host_desc[(1, 1)](src, dst, BLOCK_M=8, BLOCK_N=16, backend="interpreter")
    message = str(info.value)
    assert "test_host_descriptors.py" in message and "1D tensor descriptor needs 1 offsets" in message


def test_base_array_is_bounds_checked(rng):
    """A descriptor whose shape claims more than its base holds reads out of the array: the
    interpreter (like checked mode on compiled backends) reports it instead of reading past it."""
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    lying = TensorDescriptor(x, [16, 16], [16, 1], [16, 16])
    with pytest.raises(KernelRuntimeError, match="out of bounds of argument 'src_base'"):
        copy_host_desc[(1, 1)](lying, TensorDescriptor.from_tensor(out, [16, 16]), BLOCK_M=16, BLOCK_N=16,
                               backend="interpreter")


@pytest.mark.parametrize("backend", ["opencl"])
def test_checked_mode_bounds_checks_the_base(rng, backend):
    if not OPENCL:
        pytest.skip(f"no OpenCL device: {OPENCL_WHY}")
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    lying = TensorDescriptor(x, [16, 16], [16, 1], [16, 16])
    with pytest.raises(KernelRuntimeError, match="out of bounds of argument 'src_base'"):
        copy_host_desc[(1, 1)](lying, TensorDescriptor.from_tensor(out, [16, 16]), BLOCK_M=16, BLOCK_N=16,
                               backend=backend, debug=True)


@pytest.fixture
def cuda_sm90(monkeypatch):
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")


@pytest.mark.parametrize("tma", ["0", "1"])
def test_cuda_ptx_compiles(rng, cuda_sm90, monkeypatch, tma):
    """Compile-only for sm_90 (no GPU): the host-descriptor matmul assembles; with TILES_TMA=1 its
    epilogue store is a TMA copy whose map reads the expanded parameters."""
    monkeypatch.setenv("TILES_TMA", tma)
    a, b, _, c = operands(rng)
    c16 = np.zeros((M, 48), np.float16)[:, :N]
    compiled = matmul_host_desc.warmup(*host_descs(a, b, c16, 64, 64, 32), M, N, K, BLOCK_M=64, BLOCK_N=64,
                                       BLOCK_K=32, backend="cuda", num_warps=4)
    ptx = compiled.asm["ptx"]
    assert ".entry matmul_host_desc" in ptx
    names = [p.name for p in compiled.ir.params]
    assert names[:4] == ["a_desc_base", "a_desc_shape0", "a_desc_shape1", "a_desc_stride0"]
    if tma == "1":
        from tiles.backends.cuda.hopper.tma_spec import MapSpec, Source
        assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
        specs = [MapSpec.from_json(d) for d in compiled.metadata["tensor_maps"]]
        store = [s for s in specs if names[s.base] == "c_desc_base"]
        assert store and [names[s.param] for s in store[0].shape] == ["c_desc_shape0", "c_desc_shape1"]
        assert names[store[0].strides[0].param] == "c_desc_stride0" and store[0].strides[1] == Source(None, 1)
    else:
        assert "cp.async.bulk.tensor" not in ptx
    if toolchain.ptxas_path():
        toolchain.ptxas_info(ptx, "sm_90a")  # raises when ptxas rejects it


def test_cuda_copy_loads_and_stores_take_tma(cuda_sm90, monkeypatch):
    """Without a dot, descriptor loads take TMA too (the copy kernel of test_tma, host form)."""
    monkeypatch.setenv("TILES_TMA", "1")
    x = aligned((64, 96), np.float16)[:, :80]
    out = aligned((64, 80), np.float16)
    compiled = copy_host_desc.warmup(TensorDescriptor.from_tensor(x, [32, 64]),
                                     TensorDescriptor.from_tensor(out, [32, 64]), BLOCK_M=32, BLOCK_N=64,
                                     backend="cuda", num_warps=4)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "ld.global" not in ptx and "st.global" not in ptx


GPU, GPU_WHY = registry.status("cuda")


@pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {GPU_WHY}")
@pytest.mark.parametrize("tma", ["0", "1"])
def test_cuda_matmul_with_torch_tensors(monkeypatch, tma):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_TMA", tma)
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    kernel = tiles.jit(matmul_host_desc.fn)  # a fresh launch cache: TILES_TMA is read when compiling
    gen = torch.Generator(device="cuda").manual_seed(1234)
    m, n, k = 300, 264, 200  # not multiples of the blocks: edges zero-filled and dropped
    a = torch.randn((m, k), device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16, generator=gen)
    c_buf = torch.full((m, n + 8), float("nan"), device="cuda", dtype=torch.float16)
    c = c_buf[:, :n]
    bm, bn, bk = 64, 64, 32
    descs = host_descs(a, b, c, bm, bn, bk)
    for _ in range(2):  # the second launch takes the steady-state path
        c.fill_(7)
        compiled = kernel[(-(-m // bm), -(-n // bn))](*descs, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                      backend="cuda")
        assert bool(compiled.metadata.get("tensor_maps")) is (tma == "1")
        torch.cuda.synchronize()
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
        assert torch.isnan(c_buf[:, n:]).all()
    # TensorDescriptors with a shape smaller than the tensor: only the window is written.  Rows of
    # 256 columns (512 bytes) take TMA; rows of 255 end inside a 16-byte chunk, which a TMA store
    # would write whole (column 255 was, on the H200), so that launch takes the kernel without TMA.
    from tiles.backends.cuda import tma_launch
    encoded, encode = [], tma_launch.encode_arguments

    def spy(spec, values, address):
        encoded.append(encode(spec, values, address))
        return encoded[-1]
    monkeypatch.setattr(tma_launch, "encode_arguments", spy)
    want = (a.float() @ b.float()).half()
    for cols in (n - 8, n - 9):
        c.fill_(7)
        encoded.clear()
        inner = TensorDescriptor(c, [m - 5, cols], list(c.stride()), [bm, bn])
        kernel[(-(-m // bm), -(-n // bn))](descs[0], descs[1], inner, m, n, k, BLOCK_M=bm, BLOCK_N=bn,
                                          BLOCK_K=bk, backend="cuda")
        torch.cuda.synchronize()
        torch.testing.assert_close(c[:m - 5, :cols], want[:m - 5, :cols], rtol=1e-2, atol=1e-2)
        assert (c[m - 5:, :] == 7).all() and (c[:, cols:] == 7).all(), f"written past a window of {cols} columns"
        if tma == "1":  # encoded per launch (new sizes): the window's map, or its refusal
            windows = [e for e in encoded if e is None or e.address == c.data_ptr()]
            assert windows and all((e is None) is (cols * 2 % 16 != 0) for e in windows)


@pytest.mark.parametrize("cols,dims", [(264, (264, 295)), (256, (256, 295)), (255, None)])
def test_cuda_window_map_fields(cuda_sm90, monkeypatch, cols, dims):
    """The tensor map a launch encodes for a host descriptor's window of a wider tensor (no GPU):
    innermost size first, the tensor's row length in bytes as the stride, the block as the box,
    the view's first element as the address; a window whose rows end inside a 16-byte chunk has
    none (a TMA store writes whole chunks: column 255 of such a window was written on the H200)."""
    from tiles.backends.cuda.hopper.tma_spec import MapSpec
    from tiles.backends.cuda.tensor_map import EncodeArguments, encode_arguments
    from tiles.runtime.expanded_args import flatten
    from tiles.runtime.specialize import descriptor_names
    monkeypatch.setenv("TILES_TMA", "1")
    m, n, k = 300, 264, 200
    a, b = aligned((m, k), np.float16), aligned((k, n), np.float16)
    c = aligned((m, n + 8), np.float16)[:, 8:8 + n]  # starts 16 bytes into its rows
    window = TensorDescriptor(c, [m - 5, cols], [n + 8, 1], [64, 64])
    descs = [TensorDescriptor.from_tensor(a, [64, 32]), TensorDescriptor.from_tensor(b, [32, 64]), window]
    compiled = matmul_host_desc.warmup(*descs, m, n, k, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, backend="cuda",
                                       num_warps=4)
    names = [*(x for d in ("a_desc", "b_desc", "c_desc") for x in descriptor_names(d, 2)), "M", "N", "K"]
    by_name = dict(zip(names, flatten([*descs, m, n, k])))
    by_param = [by_name[p.name] for p in compiled.ir.params]
    params = [p.name for p in compiled.ir.params]
    store = [MapSpec.from_json(d) for d in compiled.metadata["tensor_maps"]
             if params[d["base"]] == "c_desc_base"]
    assert len(store) == 1
    address = c.__array_interface__["data"][0]
    args = encode_arguments(store[0], by_param, address)
    if dims is None:
        assert args is None
    else:
        assert args == EncodeArguments(data_type=6, rank=2, address=address, dims=dims, byte_strides=(2 * (n + 8),),
                                       box=(64, 64), element_strides=(1, 1))


def test_compile_from_triton_type_strings(rng):
    """``kernel.compile(signature=...)`` reads Triton's ``tensordesc<fp16[16, 16]>`` as the
    expanded parameters (sizes and strides unspecialized int32)."""
    sig = {"a_desc": f"tensordesc<fp16[{BM}, {BK}]>", "b_desc": f"tensordesc<fp16[{BK},{BN}]>",
           "c_desc": f"tensordesc<fp32[{BM}, {BN}]>", "M": "i32", "N": "i32", "K": "i32"}
    compiled = matmul_host_desc.compile(sig, {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}, backend="interpreter")
    names = [p.name for p in compiled.ir.params]
    assert names[:4] == ["a_desc_base", "a_desc_shape0", "a_desc_shape1", "a_desc_stride0"]
    assert compiled.ir.params[0].divisibility == 16
    with pytest.raises(LaunchError, match="tensordesc<fp16\\[16, 12\\]>.*powers of two"):
        matmul_host_desc.compile({**sig, "a_desc": "tensordesc<fp16[16, 12]>"},
                                 {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}, backend="interpreter")


class RecordingCUDA(CUDABackend):
    """Compiles for sm_90 and records each launch's values instead of running it (no GPU)."""

    name = "cuda-recording"

    def __init__(self) -> None:
        self.launches: list[tuple[str, list]] = []

    def available(self):
        return True, ""

    def arch(self):
        return "sm_90"

    def make_launcher(self, compiled, plan):
        return lambda grid, values, stream=None: self.launches.append((compiled.name, list(values)))


def test_cuda_launch_passes_the_expanded_values(rng, cuda_sm90):
    """Through the launch path (general, then the binder's steady-state path) the backend's
    launcher gets base, sizes and strides in the IR's parameter order, and the PTX assembles."""
    a, b, _, c = operands(rng)
    backend = RecordingCUDA()
    descs = host_descs(a, b, c)
    for _ in range(2):
        compiled = matmul_host_desc[grid()](*descs, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, backend=backend)
    assert [name for name, _ in backend.launches] == ["matmul_host_desc"] * 2
    for _, values in backend.launches:
        assert values[0] is a and values[1:5] == [M, K, a.strides[0] // 2, 1]
        assert values[5] is b and values[10] is c and values[15:] == [M, N, K, BM, BN, BK]
    assert ".entry matmul_host_desc" in compiled.asm["ptx"]
    if toolchain.ptxas_path():
        toolchain.ptxas_info(compiled.asm["ptx"], "sm_90")


@tiles.jit
def takes_constexpr_descriptor(desc: tl.constexpr, out):
    tl.store(out, 1)


def test_descriptor_for_a_constexpr_parameter_is_refused(rng):
    desc = TensorDescriptor.from_tensor(padded(rng, 8, 16, np.float32)[1], [8, 16])
    with pytest.raises(LaunchError, match="'desc' is a tl.constexpr parameter"):
        takes_constexpr_descriptor[(1,)](desc, np.zeros(1, np.int32), backend="interpreter")
