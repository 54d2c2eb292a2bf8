"""Progress on stderr (TILES_PROGRESS): slow compiles and autotuning, in a log and on a terminal."""

from __future__ import annotations

import io
import re
import sys
import time

import numpy as np
import pytest
from at_kernels import make_tuned_add

import tiles
import tiles.language as tl
from tiles import config, progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def fresh_kernel():
    @tiles.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    return double


def launch_double(rng, n=37):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    fresh_kernel()[(tiles.cdiv(n, 16),)](x, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("setting, terminal, expected", [
    ("1", False, True), ("0", True, False), ("", True, True), ("", False, False), ("off", True, False)])
def test_switch_and_default(monkeypatch, setting, terminal, expected):
    monkeypatch.setenv("TILES_PROGRESS", setting)
    monkeypatch.setattr(sys, "stderr", Terminal() if terminal else io.StringIO())
    assert config.progress() is expected


def test_a_compile_over_the_threshold_is_reported_with_kernel_backend_and_seconds(monkeypatch, capsys, rng):
    monkeypatch.setenv("TILES_PROGRESS", "1")
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.0)
    launch_double(rng)
    err = capsys.readouterr().err
    assert re.search(r"^tiles: compiling double for interpreter took \d+\.\ds$", err, re.MULTILINE), err


def test_fast_compiles_and_the_off_switch_stay_quiet(monkeypatch, capsys, rng):
    monkeypatch.setenv("TILES_PROGRESS", "1")
    launch_double(rng)  # well under COMPILE_NOTICE_S
    assert "tiles:" not in capsys.readouterr().err
    monkeypatch.setenv("TILES_PROGRESS", "0")
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.0)
    launch_double(rng)
    assert capsys.readouterr().err == ""


def test_a_slow_compile_says_so_while_it_runs_and_when_it_ends(monkeypatch, capsys):
    monkeypatch.setenv("TILES_PROGRESS", "1")
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.05)
    with progress.compiling("matmul_kernel", "opencl"):
        time.sleep(0.3)
        during = capsys.readouterr().err
    after = capsys.readouterr().err
    assert during == "tiles: compiling matmul_kernel for opencl (over 0.05s so far)...\n"
    assert re.fullmatch(r"tiles: compiling matmul_kernel for opencl took 0\.\ds\n", after)


def test_a_failed_slow_compile_says_it_failed(monkeypatch, capsys):
    monkeypatch.setenv("TILES_PROGRESS", "1")
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.0)
    with pytest.raises(ValueError), progress.compiling("k", "cuda"):
        time.sleep(0.05)
        raise ValueError("boom")
    assert "tiles: compiling k for cuda failed after" in capsys.readouterr().err


def test_on_a_terminal_the_compile_line_ticks_in_place(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("TILES_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.02)
    monkeypatch.setattr(progress, "REDRAW_S", 0.02)
    with progress.compiling("attention", "opencl"):
        time.sleep(0.3)
    text = terminal.getvalue()
    assert text.count("\r\x1b[Ktiles: compiling attention for opencl: 0s") >= 2  # redrawn, not appended
    assert re.search(r"0s\r\x1b\[Ktiles: compiling attention for opencl took 0\.\ds\n$", text), text


def test_autotuning_in_a_log_writes_a_line_per_config_with_its_time(monkeypatch, capsys, rng):
    monkeypatch.setenv("TILES_PROGRESS", "1")
    tuned = make_tuned_add(blocks=(16, 24, 32))  # 24 is not a power of two: that config fails
    n = 50
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    tuned[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(out, 2 * x + y)  # add_kernel adds 2x
    lines = capsys.readouterr().err.splitlines()
    tuning = [line for line in lines if line.startswith("tiles: autotun")]
    assert re.fullmatch(r"tiles: autotuning add_kernel \[1/3\] BLOCK: 16, num_warps: 4, .*: [\d.e+-]+ ms",
                        tuning[0]), tuning
    assert tuning[1].startswith("tiles: autotuning add_kernel [2/3] BLOCK: 24") and "failed: " in tuning[1]
    assert tuning[2].startswith("tiles: autotuning add_kernel [3/3] BLOCK: 32")
    assert tuning[3].startswith("tiles: autotuned add_kernel over 3 configs in ")
    assert f"best {tuned.best_config} (" in tuning[3] and len(tuning) == 4
    assert "\r" not in "".join(lines)


def test_autotuning_on_a_terminal_draws_a_bar(monkeypatch, rng):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("TILES_PROGRESS", raising=False)
    tuned = make_tuned_add(blocks=(16, 32, 64, 128))
    n = 70
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    tuned[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(out, 2 * x + y)  # add_kernel adds 2x
    text = terminal.getvalue()
    for i, filled in enumerate((0, 5, 10, 15)):
        bar = "[" + "#" * filled + "." * (20 - filled) + "]"
        assert f"\r\x1b[Ktiles: autotuning add_kernel {bar} {i + 1}/4: BLOCK: {16 << i}" in text
    assert re.search(r"4/4: BLOCK: 128, [^\r]*\(previous: [\d.e+-]+ ms\)", text)
    assert text.endswith("\r\x1b[Ktiles: autotuned add_kernel over 4 configs in "
                         f"{text.rsplit(' in ', 1)[1]}") and text.count("\n") == 1


def test_autotuning_is_quiet_when_switched_off(monkeypatch, capsys, rng):
    monkeypatch.setenv("TILES_PROGRESS", "0")
    tuned = make_tuned_add()
    n = 40
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    tuned[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(out, 2 * x + y)  # add_kernel adds 2x
    assert capsys.readouterr().err == ""


def test_on_opencl_the_first_launch_is_reported_too(monkeypatch, capsys, rng):
    from tiles.backends import registry
    ok, why = registry.status("opencl")
    if not ok:
        pytest.skip(f"OpenCL backend unavailable: {why}")
    monkeypatch.setenv("TILES_PROGRESS", "1")
    monkeypatch.setattr(progress, "COMPILE_NOTICE_S", 0.0)
    kernel = fresh_kernel()
    x = rng.standard_normal(40).astype(np.float32)
    for _ in range(2):
        out = np.empty_like(x)
        kernel[(3,)](x, out, 40, BLOCK=16, backend="opencl")
        np.testing.assert_array_equal(out, 2 * x)
    lines = [line for line in capsys.readouterr().err.splitlines() if " took " in line]
    assert len(lines) == 2, lines  # the compile, then the first launch only
    assert lines[0].startswith("tiles: compiling double for opencl took ")
    assert lines[1].startswith("tiles: compiling double for opencl (the OpenCL driver's part, at the first "
                               "launch) took ")
