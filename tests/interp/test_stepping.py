"""Stepping mode (backend "step", TILES_INTERPRET=step): pdb inside kernels, per program, on data.

pdb is driven non-interactively: its commands come from a replaced ``sys.stdin`` and what it
prints is read back from stdout.  The per-program values were checked against Triton 3.9's
interpreter (TRITON_INTERPRET=1, same kernels with triton imports): a ``breakpoint()`` stops once
per program there too, with the same loaded values; ``print``/``assert``/``if`` on a scalar's
value behave as there (a failing Python ``assert`` raises AssertionError).
"""

from __future__ import annotations

import _thread
import io
import re
import signal
import sys
import threading
import time
import traceback

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import stepping
from tiles.core.errors import KernelRuntimeError


def run_pdb(monkeypatch, capsys, commands: list[str], launch) -> str:
    """Launch with pdb reading ``commands``; what pdb printed (and the kernel's stdout)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(commands) + "\n"))
    monkeypatch.delenv("PYTHONBREAKPOINT", raising=False)
    launch()
    return capsys.readouterr().out


def values(out: str, tag: str) -> list[tuple]:
    """The tuples pdb printed for ``p (TAG, ...)`` commands."""
    return [eval(m.group(0)) for m in re.finditer(rf"\('{tag}'.*?\)(?=\n|\(Pdb)", out)]


# ---------------------------------------------------------------- tutorial-form kernels

@tiles.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        breakpoint()
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


def test_softmax_breakpoint_per_program(monkeypatch, capsys):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 13)).astype(np.float32)
    x[2, 3] = -np.inf
    y = np.zeros_like(x)
    # 2 programs, 5 rows: program 0 stops at rows 0, 2, 4, program 1 at rows 1, 3
    cmds = ["p ('D', int(row_idx), float(denominator), row.shape, str(row.dtype), int(tl.program_id(0)))",
            "c"] * 5
    out = run_pdb(monkeypatch, capsys, cmds, lambda: softmax_kernel[(2,)](
        y, x, x.shape[1], y.shape[1], 5, 13, BLOCK_SIZE=16, backend="step"))
    got = values(out, "D")
    assert [(g[1], g[5]) for g in got] == [(0, 0), (2, 0), (4, 0), (1, 1), (3, 1)]
    for _, r, den, shape, dtype, _ in got:
        e = np.exp(x[r] - x[r].max())
        assert den == pytest.approx(float(e.sum()), rel=1e-6)
        assert shape == (16,) and dtype == "float32"
    assert "(Pdb 1,0,0)" in out
    np.testing.assert_allclose(y, np.exp(x - x.max(1, keepdims=True)) /
                               np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True), rtol=1e-6)


@tiles.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    breakpoint()
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def test_layer_norm_selected_program(monkeypatch, capsys):
    """Only program 2 stops (TILES_PROGRAMS); the others run vectorized; `n` walks kernel lines."""
    rng = np.random.default_rng(2)
    M, N = 4, 37
    x = rng.standard_normal((M, N)).astype(np.float32) * 3 + 1
    w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    y, mean, rstd = np.zeros_like(x), np.zeros(M, np.float32), np.zeros(M, np.float32)
    monkeypatch.setenv("TILES_PROGRAMS", "2")
    cmds = ["p ('M', float(mean), float(rstd), int(row))", "n", "n", "n", "n",
            "p ('OFF', int(off), str(off.dtype))", "c"]
    out = run_pdb(monkeypatch, capsys, cmds, lambda: layer_norm_fwd[(M,)](
        x, y, w, b, mean, rstd, N, N, 1e-5, BLOCK_SIZE=16, backend="step"))
    (m,) = values(out, "M")
    assert m[3] == 2
    assert m[1] == pytest.approx(float(x[2].mean()), rel=1e-5)
    assert m[2] == pytest.approx(float(1 / np.sqrt(x[2].var() + 1e-5)), rel=1e-4)
    assert values(out, "OFF") == [("OFF", 0, "int32")]
    lines = re.findall(r"^-> (.*)$", out, re.M)
    assert lines[:5] == ["tl.store(Mean + row, mean)", "tl.store(Rstd + row, rstd)",
                         "for off in range(0, N, BLOCK_SIZE):", "cols = off + tl.arange(0, BLOCK_SIZE)",
                         "mask = cols < N"]
    assert "(Pdb 2,0,0)" in out and "(Pdb 0,0,0)" not in out
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


@tiles.jit
def scale_add(a, b, alpha):
    scaled = a * alpha
    return scaled + b


@tiles.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        breakpoint()
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = scale_add(accumulator, 1.0, 2.0)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def test_matmul_k_loop_and_jit_helper(monkeypatch, capsys):
    """Each K iteration of program (1, 1) stops with the partial product; `s` enters the helper."""
    rng = np.random.default_rng(3)
    M, N, K = 40, 24, 50
    a = rng.standard_normal((M, K)).astype(np.float16)  # the tutorial's operands
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    cmds = []
    for _ in range(4):  # cdiv(50, 16) = 4 iterations
        cmds += ["p ('K', int(k), accumulator.numpy().tolist())", "c"]
    cmds[-1] = "n"
    cmds += ["n", "n", "s", "n", "n", "p ('H', scaled.numpy()[0, 0].item(), float(alpha))", "c"]
    with stepping.options(programs=[(1, 1, 0)]):
        out = run_pdb(monkeypatch, capsys, cmds, lambda: matmul_kernel[(3, 2)](
            a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, backend="step"))
    got = values(out, "K")
    assert [g[1] for g in got] == [0, 1, 2, 3]
    rows, cols = np.arange(16, 32) % M, np.arange(16, 32) % N
    for _, k, acc in got:
        hi = min(K, 16 * (k + 1))
        np.testing.assert_allclose(np.array(acc), a32[rows, :hi] @ b32[:hi, cols], rtol=1e-4, atol=1e-4)
    ((_, h, alpha),) = values(out, "H")
    assert alpha == 2.0 and h == pytest.approx(float(a32[16] @ b32[:, 16]) * 2.0, rel=1e-4)
    assert "scaled = a * alpha" in out  # pdb showed the helper's line
    np.testing.assert_allclose(c, (a32 @ b32) * 2 + 1, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- Python on values

@tiles.jit
def python_on_values(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    total = tl.sum(x)
    if total > 10:
        print("big block", pid)
    steps = 0
    while total > 1:
        total = total // 2
        steps += 1
    assert steps < 6, "too many halvings"
    tl.store(out_ptr + pid, steps)


def test_python_control_flow_on_values(capsys):
    x = np.array([1, 2, 3, 4, 40, 1, 0, 0, 0, 0, 0, 0], np.int32)
    out = np.zeros(3, np.int32)
    python_on_values[(3,)](x, out, x.size, BLOCK=4, backend="step")
    assert out.tolist() == [3, 5, 0]
    printed = capsys.readouterr().out
    assert "pid (1, 0, 0) big block" in printed and "pid (0, 0, 0)" not in printed
    ref = np.zeros(3, np.int32)
    python_on_values[(3,)](x, ref, x.size, BLOCK=4, backend="interpreter")
    assert ref.tolist() == out.tolist()


def test_python_assert_on_values_raises():
    x = np.array([1, 2, 3, 4, 1000, 1, 0, 0], np.int32)
    out = np.zeros(2, np.int32)
    with pytest.raises(AssertionError, match="too many halvings") as info:
        python_on_values[(2,)](x, out, x.size, BLOCK=4, backend="step")
    assert "program (1, 0, 0)" in "".join(getattr(info.value, "__notes__", []))


# ---------------------------------------------------------------- checked memory, watch, interrupts

@tiles.jit
def copy_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs), mask=offs < n)


def test_checked_memory_names_line_and_program():
    x, out = np.ones(10, np.float32), np.zeros(10, np.float32)
    with pytest.raises(KernelRuntimeError) as info:
        copy_kernel[(3,)](x, out, 10, BLOCK=4, backend="step")
    msg = str(info.value)
    assert "program (2, 0, 0)" in msg and "tl.store(out + offs, tl.load(x + offs)" in msg
    assert "test_stepping.py" in msg and "out of bounds of argument 'x'" in msg


@tiles.jit
def histogram_bug(keys, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    k = tl.load(keys + offs, mask=offs < n, other=0)
    first = tl.min(k, axis=0)
    tl.store(out + first, pid)


def test_watchpoint_names_writer_line_and_program(monkeypatch, capsys):
    keys = np.array([5, 6, 7, 3, 3, 9, 8, 4, 9, 9], np.int32)
    out = np.full(12, -1, np.int32)
    monkeypatch.setenv("TILES_WATCH", "out[3]")
    monkeypatch.setenv("TILES_WATCH_BREAK", "0")
    histogram_bug[(3,)](keys, out, keys.size, BLOCK=4, backend="step")
    err = capsys.readouterr().err
    hits = stepping.LAST_HITS
    assert [(h.element, h.program, h.old, h.new) for h in hits] == [("out[3]", (0, 0, 0), -1, 0),
                                                                     ("out[3]", (1, 0, 0), 0, 1)]
    assert all(h.loc.line and h.loc.source == "tl.store(out + first, pid)" for h in hits)
    assert "written by program (1, 0, 0)" in err and "test_stepping.py:" in err
    # vectorized programs are watched too (only program 2 stepped)
    out[:] = -1
    with stepping.options(programs="2"):
        histogram_bug[(3,)](keys, out, keys.size, BLOCK=4, backend="step")
    assert [h.program for h in stepping.LAST_HITS] == [(0, 0, 0), (1, 0, 0)]


def test_watchpoint_stops_in_pdb_after_the_write(monkeypatch, capsys):
    keys = np.array([5, 6, 7, 3, 3, 9, 8, 4, 9, 9], np.int32)
    out = np.full(12, -1, np.int32)
    with stepping.options(watch=f"{hex(out.ctypes.data + 4 * 3)}", programs="1"):
        printed = run_pdb(monkeypatch, capsys, ["p ('W', int(pid), int(first))", "c"],
                          lambda: histogram_bug[(3,)](keys, out, keys.size, BLOCK=4, backend="step"))
    assert values(printed, "W") == [("W", 1, 3)]
    assert "(Pdb 1,0,0)" in printed


def interrupt_until_caught(run) -> KeyboardInterrupt:
    """``run()`` (a kernel that never ends) interrupted as by Ctrl-C, every 0.5 s until it stops: an
    interrupt that lands while a finalizer runs is swallowed by CPython ("Exception ignored in"),
    so one interrupt alone can leave the test spinning."""
    stop = threading.Event()

    def keep_interrupting() -> None:
        while not stop.wait(0.5):
            _thread.interrupt_main()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal
    thread = threading.Thread(target=keep_interrupting, daemon=True)
    thread.start()
    caught = None
    try:
        run()
    except KeyboardInterrupt as e:
        caught = e
    finally:
        stop.set()
        thread.join()
        try:  # one more interrupt may have fired between the catch and stop.set()
            for _ in range(50):
                time.sleep(0.002)
        except KeyboardInterrupt:
            pass
        signal.signal(signal.SIGINT, previous)
    assert caught is not None, "the kernel returned: it was meant to spin until interrupted"
    return caught


def test_interrupt_shows_kernel_line():
    """Ctrl-C (here: interrupt_main from a timer) during a stepped kernel: the kernel's line is in
    the traceback, as a Python frame."""

    x = np.array([1], np.int32)
    out = np.zeros(1, np.int32)
    spin[(1,)](np.zeros(1, np.int32), out, backend="step")  # traced now: the interrupt hits the run
    interrupted = interrupt_until_caught(lambda: spin[(1,)](x, out, backend="step"))
    frames = traceback.extract_tb(interrupted.__traceback__)
    lines = [f.line for f in frames if f.name == "spin"]
    assert lines and lines[-1] in ("while v > 0:", "v = (v * 3) % 7 + 1")


def test_interrupt_in_vectorized_interpreter_names_kernel_line():
    """The same on the vectorized interpreter: the KeyboardInterrupt carries the kernel line."""
    x = np.array([1], np.int32)
    out = np.zeros(1, np.int32)
    spin[(1,)](np.zeros(1, np.int32), out, backend="interpreter")
    interrupted = interrupt_until_caught(lambda: spin[(1,)](x, out, backend="interpreter"))
    notes = "".join(getattr(interrupted, "__notes__", []))
    assert "test_stepping.py:" in notes and "in kernel 'spin'" in notes
    assert "while v > 0:" in notes or "v = (v * 3) % 7 + 1" in notes


@tiles.jit
def spin(x, out):
    v = tl.load(x)
    while v > 0:
        v = (v * 3) % 7 + 1
    tl.store(out, v)


def test_race_check_works_across_stepped_and_vectorized_programs(monkeypatch):
    """TILES_INTERPRET_CHECKS=races sees programs 0 (vectorized) and 1 (stepped) store to out[3]."""
    keys = np.array([5, 6, 7, 3, 3, 9, 8, 4, 9, 9], np.int32)
    out = np.full(12, -1, np.int32)
    monkeypatch.setenv("TILES_INTERPRET_CHECKS", "races")
    with stepping.options(programs="1"), pytest.raises(KernelRuntimeError, match="data race") as info:
        histogram_bug[(3,)](keys, out, keys.size, BLOCK=4, backend="step")
    assert "program (0, 0, 0)" in str(info.value) or "program 0" in str(info.value)


def test_program_selection_outside_the_grid_is_refused():
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with stepping.options(programs="5"), pytest.raises(Exception, match="outside the grid"):
        copy_kernel[(2,)](x, out, 8, BLOCK=4, backend="step")
    with stepping.options(programs="1"):
        copy_kernel[(2,)](x, out, 8, BLOCK=4, backend="step")
    assert out.tolist() == [1.0] * 8


def test_watch_of_unknown_argument_lists_the_arguments():
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with stepping.options(watch="y[2]"), pytest.raises(Exception, match="array arguments: x, out"):
        copy_kernel[(2,)](x, out, 8, BLOCK=4, backend="step")


def test_tiles_interpret_step_selects_the_step_backend(monkeypatch):
    from tiles.backends import registry
    monkeypatch.setenv("TILES_INTERPRET", "step")
    registry.set_backend(None)
    assert registry.default().name == "step"
    x, out = np.arange(8, dtype=np.float32) - 3.5, np.zeros(8, np.float32)
    copy_kernel[(2,)](x, out, 8, BLOCK=4)
    assert out.tolist() == x.tolist()


@tiles.jit
def wants_data_while_traced(x, out):
    v = tl.load(x)
    tl.store(out, v + v.numpy().item())


def test_data_of_a_traced_tile_says_to_use_stepping_mode():
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    with pytest.raises(tiles.CompilationError, match="TILES_INTERPRET=step"):
        wants_data_while_traced[(1,)](x, out, backend="interpreter")


@tiles.jit
def saves_rows(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if x.numpy().max() > 2:  # host Python on the data, as under TRITON_INTERPRET=1
        record(int(pid), x.numpy().copy())


SAVED: list = []


def record(pid, row):
    SAVED.append((pid, row))


def test_host_python_on_data_runs_every_program_stepped(capsys):
    """Code that needs data cannot be traced: every program is stepped, a selection is overridden."""
    SAVED.clear()
    x = np.arange(10, dtype=np.float32)
    with stepping.options(programs="0"):
        saves_rows[(3,)](x, 10, BLOCK=4, backend="step")
    assert [p for p, _ in SAVED] == [0, 1, 2]
    np.testing.assert_array_equal(SAVED[2][1], [8, 9, 0, 0])
    assert "cannot run vectorized" in capsys.readouterr().err
