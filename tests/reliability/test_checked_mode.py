"""Checked mode (``debug=True`` / ``TILES_DEBUG=1``): every load, store and atomic is checked
against the extent of the argument its pointer derives from, on every backend.

The interpreter checks every access itself; OpenCL and CUDA run the IR pass of
``tiles/core/checked.py``.  Each test runs on the interpreter, on OpenCL (pocl in CI) and on
CUDA (skipped without a GPU) and expects one error shape: ``KernelRuntimeError`` naming the
kernel's file:line, the kind of access, the program id, the byte offset and the argument.
Compiled backends skip the bad lanes and finish the launch; the interpreter stops at the
failing instruction.  Either way nothing outside the arguments is written.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from tiles.backends import registry
from tiles.conformance import corpus
from tiles.conformance.profiles import CI
from tiles.core.checked import instrument
from tiles.core.errors import KernelRuntimeError, UnsupportedError
from tiles.core.verify import verify
from tiles.runtime import checked_launch

from . import checked_kernels as K

SOURCE = inspect.getsource(K).splitlines()


def line_of(text: str) -> int:
    """The line of checked_kernels.py holding ``text`` (error messages must point there)."""
    return next(i for i, s in enumerate(SOURCE, 1) if text in s)


def _backend_param(name: str):
    if name == "interpreter":
        return pytest.param(name)
    ok, why = registry.status(name)
    return pytest.param(name, marks=pytest.mark.skipif(not ok, reason=f"{name} unavailable: {why}"))


BACKENDS = [_backend_param(n) for n in ("interpreter", "opencl", "cuda")]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def compiled(backend: str) -> bool:
    return backend != "interpreter"


ERROR = re.compile(r"(?P<kind>load|store|atomic \w+|atomic_cas) in kernel '(?P<kernel>\w+)', "
                   r"program \((?P<x>\d+), (?P<y>\d+), (?P<z>\d+)\): byte offset (?P<off>-?\d+) "
                   r"\(an access of (?P<size>\d+) bytes\) is out of bounds of argument "
                   r"'(?P<arg>\w+)' \((?P<what>[^;]*); valid byte offsets \[(?P<lo>-?\d+), (?P<hi>-?\d+)\)\)")


def expect_out_of_bounds(run, kind: str, kernel: str, arg: str, line: str):
    """Run, expect the out-of-bounds error; return (program id, byte offset, valid range)."""
    with pytest.raises(KernelRuntimeError) as info:
        run()
    text = str(info.value)
    m = ERROR.search(text)
    assert m, text
    assert (m["kind"], m["kernel"].lstrip("_"), m["arg"]) == (kind, kernel, arg), text
    assert f"checked_kernels.py:{line_of(line)}" in text, text
    assert info.value.loc.line == line_of(line)
    pid = (int(m["x"]), int(m["y"]), int(m["z"]))
    return pid, int(m["off"]), (int(m["lo"]), int(m["hi"]))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- loads and stores


def test_small_out_of_bounds_load(backend):
    x = rng(1).standard_normal(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    pid, off, span = expect_out_of_bounds(
        lambda: K.copy[(2,)](x, out, 100, 0, BLOCK=64, backend=backend),
        "load", "copy", "x", "tl.load(x + offs + shift)")
    assert pid == (1, 0, 0) and 400 <= off < 512 and off % 4 == 0 and span == (0, 400)
    if compiled(backend):  # the bad lanes were skipped, the others ran
        np.testing.assert_array_equal(out, x)


def test_store_16_kib_past_the_buffer_is_suppressed(backend):
    parent = rng(2).standard_normal(64 + 4096 + 64).astype(np.float32)
    before = parent.copy()
    out = parent[:64]  # the argument is a view: the rest of the parent is not its memory
    pid, off, span = expect_out_of_bounds(
        lambda: K.store_at[(1,)](out, 64, 4096, BLOCK=64, backend=backend),
        "store", "store_at", "out", "tl.store(out + offs + shift")
    assert pid == (0, 0, 0) and 4096 * 4 <= off < 4160 * 4 and span == (0, 256)
    np.testing.assert_array_equal(parent, before)


def test_negative_offsets(backend):
    x = rng(3).standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    pid, off, _ = expect_out_of_bounds(
        lambda: K.copy[(1,)](x, out, 64, -3, BLOCK=64, backend=backend),
        "load", "copy", "x", "tl.load(x + offs + shift)")
    assert pid == (0, 0, 0) and off in (-12, -8, -4)
    if compiled(backend):
        np.testing.assert_array_equal(out[3:], x[:-3])
        np.testing.assert_array_equal(out[:3], 0)


def test_masked_off_lanes_are_not_reported(backend):
    x = rng(4).standard_normal(77).astype(np.float32)
    out = np.full(77, np.nan, np.float32)
    K.masked_far[(2,)](x, out, 77, BLOCK=64, backend=backend)
    np.testing.assert_array_equal(out, x * 2)


def test_view_of_a_larger_array(backend):
    parent = rng(5).standard_normal(200).astype(np.float32)
    x = parent[50:150]  # reading x[100:128] stays inside the parent, but not inside x
    out = np.zeros(100, np.float32)
    pid, off, span = expect_out_of_bounds(
        lambda: K.copy[(2,)](x, out, 100, 0, BLOCK=64, backend=backend),
        "load", "copy", "x", "tl.load(x + offs + shift)")
    assert pid == (1, 0, 0) and 400 <= off < 512 and span == (0, 400)


def test_scalar_store(backend):
    out = np.zeros(10, np.float32)
    K.scalar_store[(1,)](out, 9, 1.5, backend=backend)
    assert out[9] == 1.5
    pid, off, _ = expect_out_of_bounds(lambda: K.scalar_store[(1,)](out, 10, 2.5, backend=backend),
                                       "store", "scalar_store", "out", "tl.store(out + at, value)")
    assert (pid, off) == ((0, 0, 0), 40)
    np.testing.assert_array_equal(out, [0] * 9 + [1.5])


def test_two_dimensional_grid_reports_the_program(backend):
    x = rng(6).standard_normal((8, 12)).astype(np.float32)
    out = np.zeros((8, 12), np.float32)
    # a row stride of 13 instead of 12: row 7 columns 5.. read past the 96 elements of x
    pid, off, _ = expect_out_of_bounds(
        lambda: K.rows[(2, 3)](x, out, 8, 12, 13, BR=4, BC=4, backend=backend),
        "load", "rows", "x", "tl.load(x + r * stride + c, mask=keep)")
    col = off // 4 - 7 * 13
    assert 5 <= col < 12 and pid == (1, col // 4, 0), (pid, off)


# ---------------------------------------------------------------- atomics


def test_atomic_add_out_of_bounds(backend):
    idx = rng(7).integers(0, 8, 200).astype(np.int32)
    idx[[17, 150]] = [8, -1]
    counts = np.zeros(8, np.int32)
    pid, off, _ = expect_out_of_bounds(
        lambda: K.atomic_add[(4,)](counts, idx, 200, BLOCK=64, backend=backend),
        "atomic add", "atomic_add", "counts", "tl.atomic_add(counts + i, 1")
    assert (pid, off) in (((0, 0, 0), 32), ((2, 0, 0), -4))
    if compiled(backend):  # every good lane counted once, the two bad ones skipped
        good = idx[(idx >= 0) & (idx < 8)]
        np.testing.assert_array_equal(counts, np.bincount(good, minlength=8))


def test_atomic_cas_out_of_bounds(backend):
    lock = np.zeros(4, np.int32)
    K.atomic_cas[(1,)](lock, 2, backend=backend)
    np.testing.assert_array_equal(lock, [0, 0, 7, 0])
    pid, off, _ = expect_out_of_bounds(lambda: K.atomic_cas[(1,)](lock, 4, backend=backend),
                                       "atomic_cas", "atomic_cas", "lock", "tl.atomic_cas(lock + slot")
    assert (pid, off) == ((0, 0, 0), 16)
    np.testing.assert_array_equal(lock, [0, 0, 7, 0])


# ---------------------------------------------------------------- pointers that move


def test_loop_carried_pointer(backend):
    x = rng(8).standard_normal(4 * 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    plain = np.zeros(32, np.float32)
    K.loop_sum[(1,)](x, out, 4, BLOCK=32, backend=backend)
    K.loop_sum_plain[(1,)](x, plain, 4, BLOCK=32, backend=backend)
    np.testing.assert_array_equal(out, plain)
    pid, off, _ = expect_out_of_bounds(lambda: K.loop_sum[(1,)](x, out, 5, BLOCK=32, backend=backend),
                                       "load", "loop_sum", "x", "acc += tl.load(p)")
    assert pid == (0, 0, 0) and 4 * 32 * 4 <= off < 5 * 32 * 4


def test_pointer_selected_from_two_arguments(backend):
    g = rng(9)
    x, y = g.standard_normal(40).astype(np.float32), g.standard_normal(50).astype(np.float32)
    for use_y, src in ((0, x), (1, y)):
        out = np.zeros(64, np.float32)
        K.select_source[(1,)](x, y, out, use_y, 40, BLOCK=64, backend=backend)
        np.testing.assert_array_equal(out[:40], src[:40])
    out = np.zeros(64, np.float32)
    with pytest.raises(KernelRuntimeError, match=r"load in kernel '_select_source', program \(0, 0, 0\)"):
        K.select_source[(1,)](x, y, out, 0, 64, BLOCK=64, backend=backend)


# ---------------------------------------------------------------- device_assert


def test_device_assert(backend):
    x = rng(10).uniform(0.5, 2.0, 100).astype(np.float32)
    K.assert_positive[(2,)](x, 100, BLOCK=64, backend=backend)
    x[70] = -1.0
    with pytest.raises(KernelRuntimeError) as info:
        K.assert_positive[(2,)](x, 100, BLOCK=64, backend=backend)
    text = str(info.value)
    assert "device_assert failed in kernel '_assert_positive', program (1, 0, 0): x must be positive" in text
    assert f"checked_kernels.py:{line_of('tl.device_assert(v > 0')}" in text


# ---------------------------------------------------------------- correct kernels


def test_correct_kernels_give_identical_results(backend):
    g = rng(11)
    n = 1000 + 37
    x, y = g.standard_normal(n).astype(np.float32), g.standard_normal(n).astype(np.float32)
    x[[3, 500]] = [np.nan, -np.inf]
    outs = [np.zeros(n, np.float32) for _ in range(2)]
    for kernel, out in zip((K.vector_add, K.vector_add_plain), outs):
        kernel[(triton_cdiv(n, 256),)](x, y, out, n, BLOCK=256, backend=backend)
    np.testing.assert_array_equal(*outs)

    rows, cols = 7, 93
    s = g.standard_normal((rows, cols)).astype(np.float32)
    outs = [np.zeros_like(s) for _ in range(2)]
    for kernel, out in zip((K.softmax, K.softmax_plain), outs):
        kernel[(rows,)](s, out, cols, cols, BLOCK=128, backend=backend)
    np.testing.assert_array_equal(*outs)

    M, N, Kd = 37, 29, 45
    a = g.standard_normal((M, Kd)).astype(np.float32)
    b = g.standard_normal((Kd, N)).astype(np.float32)
    outs = [np.zeros((M, N), np.float32) for _ in range(2)]
    for kernel, out in zip((K.matmul, K.matmul_plain), outs):
        kernel[(triton_cdiv(M, 16), triton_cdiv(N, 16))](a, b, out, M, N, Kd, BM=16, BN=16, BK=16,
                                                          backend=backend)
    np.testing.assert_array_equal(*outs)
    np.testing.assert_allclose(outs[0], a @ b, rtol=1e-4, atol=1e-4)


CORPUS_STRIDE = {"opencl": 25, "cuda": 1}  # pocl compiles take seconds: a sample there


def _assert_same_bits(plain, checked, what):
    """Bit for bit, except that a NaN may come back as another NaN (its sign and payload are
    unspecified; LLVM may pick other instructions for the checked kernel)."""
    try:
        both_nan = np.isnan(plain.astype(np.float64)) & np.isnan(checked.astype(np.float64))
    except (TypeError, ValueError):
        both_nan = np.zeros(plain.shape, bool)
    if plain.dtype.kind not in "fV":
        both_nan[:] = False
    np.testing.assert_array_equal(plain[~both_nan].view(np.uint8), checked[~both_nan].view(np.uint8),
                                  err_msg=what)


@pytest.mark.parametrize("name", [p for p in BACKENDS if p.values[0] != "interpreter"],
                         ids=lambda p: str(p))
def test_corpus_kernels_are_unchanged_by_checked_mode(name, monkeypatch):
    """Conformance-corpus kernels stay in bounds: checked mode must neither raise (a false
    positive) nor change a single output bit.  All of them on CUDA, a sample on OpenCL."""
    from tiles.core.errors import UnsupportedError
    seen, cases = set(), []
    for case in corpus.all_cases(CI):
        key = (case.kernel, tuple(sorted(case.constexprs.items(), key=str)))
        if key not in seen:
            seen.add(key)
            cases.append(case)
    ran = 0
    for case in cases[::CORPUS_STRIDE[name]]:
        outputs = []
        for debug in (False, True):
            monkeypatch.setattr(case.kernel, "debug", debug)
            args = case.args()
            try:
                with np.errstate(all="ignore"):
                    case.kernel[case.grid](*args, backend=name, **case.constexprs)
            except UnsupportedError:
                break
            outputs.append([np.ascontiguousarray(args[i]).reshape(-1).copy() for i in case.outputs])
        else:
            for rule, plain, checked in zip(case.outputs.values(), *outputs):
                if rule.kind == "multiset":  # e.g. tickets from atomics: which program gets which varies
                    plain, checked = np.sort(plain), np.sort(checked)
                _assert_same_bits(plain, checked, case.id)
            compiled = case.kernel.cache.values()
            assert any(checked_launch.plan_of(c) for c in compiled), case.id
            ran += 1
    assert ran >= len(cases[::CORPUS_STRIDE[name]]) // 2, ran


def test_an_error_does_not_stick_to_the_next_launch(backend):
    x = rng(12).standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(KernelRuntimeError):
        K.copy[(1,)](x, out, 64, 1, BLOCK=64, backend=backend)
    K.copy[(1,)](x, out, 64, 0, BLOCK=64, backend=backend)
    np.testing.assert_array_equal(out, x)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- the pass itself


def _traced(kernel, args, constexprs):
    from tiles.runtime.jit import LAUNCH_KEYWORDS
    constexprs = {k: v for k, v in constexprs.items() if k not in LAUNCH_KEYWORDS}  # e.g. num_warps
    return kernel.trace(kernel.specialize(kernel._bind(args, constexprs)))


def _instrumented(kernel, args, constexprs):
    return instrument(_traced(kernel, args, constexprs))


MEMORY_OPS = ("load", "store", "atomic", "atomic_cas", "desc_load", "desc_store")  # a descriptor access is one site


def test_instrumented_corpus_passes_the_verifier():
    """Every conformance-corpus kernel (loops, ifs, whiles, atomics, dots, block pointers...)
    still verifies after instrumentation, and each of its accesses is either checked or
    listed as unchecked."""
    seen = set()
    checked = 0
    for case in corpus.all_cases(CI):
        key = (case.kernel, tuple(sorted(case.constexprs.items(), key=str)))
        if key in seen:
            continue
        seen.add(key)
        with np.errstate(all="ignore"):
            traced = _traced(case.kernel, case.args(), case.constexprs)
        accesses = sum(1 for i in traced.walk() if i.op.value in MEMORY_OPS)
        asserts = sum(1 for i in traced.walk() if i.op.value == "device_assert")
        kernel, plan = instrument(traced)
        verify(kernel)
        assert len(plan.sites) + len(plan.unchecked) == accesses + asserts, case.id
        assert not any(i.op.value == "device_assert" for i in kernel.walk()), case.id
        checked += len(plan.sites)
    assert len(seen) > 100 and checked > len(seen)


def test_unknown_pointer_origin_stays_unchecked(backend):
    x = rng(13).standard_normal(32).astype(np.float32)
    _, plan = _instrumented(K.from_int, (x, np.zeros(32, np.float32)), {"BLOCK": 32})
    assert [loc.line for loc in plan.unchecked] == [line_of("tl.store(out + offs, tl.load(p + offs))")]
    assert [site.kind for site in plan.sites] == ["store"]  # the store through `out` is checked
    out = np.zeros(32, np.float32)
    if backend == "opencl" and registry.get("opencl").is_gpu():
        with pytest.raises(UnsupportedError, match="int_to_ptr is not supported"):  # no device addresses
            K.from_int[(1,)](x, out, BLOCK=32, backend=backend)
        return
    K.from_int[(1,)](x, out, BLOCK=32, backend=backend)
    np.testing.assert_array_equal(out, x)


def test_checked_mode_follows_tiles_debug(monkeypatch):
    """TILES_DEBUG=1 turns checked mode on for kernels that do not say ``debug=``."""
    import tiles
    import tiles.language as tl

    @tiles.jit
    def head(x, out):
        tl.store(out + tl.arange(0, 16), tl.load(x + tl.arange(0, 16)))

    x = np.zeros(8, np.float32)
    out = np.zeros(16, np.float32)
    for flag, expect_checked in (("0", False), ("1", True)):
        monkeypatch.setenv("TILES_DEBUG", flag)
        monkeypatch.setenv("TILES_CHECK", "1")  # the instrumented IR goes through the verifier
        c = head.warmup(x, out, backend="cuda")
        assert ("checked_record" in c.asm["ir"]) is expect_checked


@pytest.mark.skipif(__import__("tiles.backends.cuda.toolchain", fromlist=["x"]).ptxas_path() is None,
                    reason="ptxas is not on PATH")
@pytest.mark.parametrize("case", ["vector_add", "loop_sum", "atomic_cas", "assert_positive", "matmul"])
def test_checked_ptx_assembles(case):
    """CUDA without a GPU: the checked kernels lower to PTX that ptxas accepts."""
    from tiles.backends.cuda import toolchain
    f32 = np.zeros(64, np.float32)
    args = {"vector_add": ((f32, f32, f32, 64), {"BLOCK": 64}),
            "loop_sum": ((f32, f32, 2), {"BLOCK": 32}),
            "atomic_cas": ((np.zeros(4, np.int32), 1), {}),
            "assert_positive": ((f32, 64), {"BLOCK": 64}),
            "matmul": ((np.zeros((32, 32), np.float32),) * 3 + (32, 32, 32),
                       {"BM": 16, "BN": 16, "BK": 16})}[case]
    c = getattr(K, case).warmup(*args[0], backend="cuda", **args[1])
    assert "checked_record" in c.asm["ir"]
    info = toolchain.ptxas_info(c.asm["ptx"], c.metadata["arch"])
    assert info.get("spill_stores", 0) == 0, info


def test_checked_rocm_code_object_links():
    """ROCm is compile-only here: the instrumented kernel links into an HSACO for each arch."""
    from tiles.backends.rocm import ROCmBackend, toolchain
    from tiles.backends.rocm.codeobject import read_code_object
    if toolchain.find_linker() is None:
        pytest.skip("no ld.lld found (install ROCm or `apt-get install lld`)")

    class CompileOnly(ROCmBackend):
        name = "rocm-checked-compile-only"

        def __init__(self, arch: str) -> None:
            self._arch = arch

        def arch(self) -> str:
            return self._arch

    f32 = np.zeros(64, np.float32)
    for arch in ("gfx90a", "gfx942", "gfx1100"):
        for kernel, args, meta in ((K.vector_add, (f32, f32, f32, 64), {"BLOCK": 64}),
                                   (K.atomic_add, (np.zeros(8, np.int32), np.zeros(64, np.int32), 64),
                                    {"BLOCK": 64}),
                                   (K.loop_sum, (f32, f32, 2), {"BLOCK": 32})):
            kernel.cache.clear()
            c = kernel.warmup(*args, backend=CompileOnly(arch), **meta)
            assert "checked_record" in c.asm["ir"]
            code = read_code_object(c.asm["hsaco"])
            assert [k.name for k in code.kernels] == [c.name]


# ---------------------------------------------------------------- host side


def test_byte_span_matches_the_interpreter_extent():
    from tiles.interp.memory import _extent
    base = rng(14).standard_normal((6, 10)).astype(np.float32)
    views = [base, base[2:5], base[:, 3:7], base[::-1], base[:, ::-2], base.T, base[1:1], base[3, 4:5]]
    for v in views:
        start = v.__array_interface__["data"][0]
        lo, hi = _extent(v)
        assert checked_launch.byte_span(v) == ((lo - start, hi - start) if v.size else (0, 0))


@pytest.mark.skipif(not registry.status("cuda")[0], reason="no CUDA GPU")
def test_cuda_torch_views_protect_the_parent():
    """On CUDA, torch tensors are passed by address: a view's neighbours in its parent are real
    device memory, and checked mode must keep a store past the view from reaching them."""
    torch = pytest.importorskip("torch")
    parent = torch.arange(64 + 4096 + 64, dtype=torch.float32, device="cuda")
    before = parent.clone()
    out = parent[:64]
    pid, off, span = expect_out_of_bounds(
        lambda: K.store_at[(1,)](out, 64, 4096, BLOCK=64, backend="cuda"),
        "store", "store_at", "out", "tl.store(out + offs + shift")
    assert pid == (0, 0, 0) and span == (0, 256) and off >= 4096 * 4
    torch.cuda.synchronize()
    assert torch.equal(parent, before)
