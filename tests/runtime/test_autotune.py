"""@tiles.autotune and @tiles.heuristics on the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
import rt_kernels as kernels
from at_kernels import BLOCKS, make_tuned_add, make_tuned_increment, make_tuned_scale, make_tuned_sum

import tiles
import tiles.language as tl


def grid_for(n):
    return lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)


def arrays(n):
    x = np.arange(n, dtype=np.float32)
    return x, np.ones(n, np.float32), np.zeros(n, np.float32)


def test_tunes_once_per_key_and_launches_the_best():
    tuned = make_tuned_add()
    x, y, out = arrays(200)
    tuned[grid_for(200)](x, y, out, 200)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert set(tuned.configs_timings) == set(tuned.configs)
    assert all(t > 0 for t in tuned.configs_timings.values())
    best = min(tuned.configs_timings, key=tuned.configs_timings.get)
    assert tuned.best_config == best
    first_timings = tuned.configs_timings
    tuned[grid_for(200)](x, y, out, 200)
    assert tuned.configs_timings is first_timings           # same key: no new tuning
    x, y, out = arrays(300)
    tuned[grid_for(300)](x, y, out, 300)
    assert tuned.configs_timings is not first_timings       # new key: tuned again
    assert len(tuned.cache) == 2
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_dtype_is_part_of_the_key():
    tuned = make_tuned_add()
    assert tuned.tuning_key({"n": 8, "x": np.zeros(1, np.float32)}, {}) != \
        tuned.tuning_key({"n": 8, "x": np.zeros(1, np.float16)}, {})


def test_grid_lambda_sees_the_config_meta_parameters():
    seen = []
    tuned = make_tuned_add(blocks=(32,))

    def grid(meta):
        seen.append((meta["BLOCK"], meta["num_warps"]))
        return (tiles.cdiv(100, meta["BLOCK"]),)
    x, y, out = arrays(100)
    tuned[grid](x, y, out, 100)
    assert seen == [(32, 4)]
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_failing_configs_are_skipped_with_their_reason():
    tuned = make_tuned_add(blocks=(3, 32))  # arange over 3 elements is not a power of two
    x, y, out = arrays(64)
    tuned[grid_for(64)](x, y, out, 64)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert tuned.best_config.kwargs == {"BLOCK": 32}
    [(failed, reason)] = tuned.failures.items()
    assert failed.kwargs == {"BLOCK": 3} and reason


def test_all_configs_failing_raises_with_every_reason():
    tuned = make_tuned_add(blocks=(3, 5))
    x, y, out = arrays(64)
    with pytest.raises(tiles.AutotuneError, match="every configuration failed") as info:
        tuned[grid_for(64)](x, y, out, 64)
    assert "BLOCK: 3" in str(info.value) and "BLOCK: 5" in str(info.value)


def test_reset_to_zero_protects_accumulators():
    x = np.arange(100, dtype=np.float32)
    total = np.zeros(1, np.float32)
    make_tuned_sum(reset_to_zero=["total_ptr"])[grid_for(100)](x, total, 100)
    assert total[0] == x.sum()
    unprotected = np.zeros(1, np.float32)
    make_tuned_sum()[grid_for(100)](x, unprotected, 100)
    assert unprotected[0] > x.sum()  # the trials' sums piled up: the check above can fail


def test_restore_value_undoes_trials():
    x = np.arange(50, dtype=np.float32)
    make_tuned_increment(restore_value=["x_ptr"])[grid_for(50)](x, 50)
    np.testing.assert_array_equal(x, np.arange(50) + 1)


def test_heuristics_under_autotune():
    scale = tiles.jit(kernels.scale_kernel.fn)  # fresh caches to inspect below
    tuned = make_tuned_scale(scale)
    for n in (64, 70):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        tuned[grid_for(n)](x, out, n)
        np.testing.assert_array_equal(out, 3 * x)
    even_values = {c.ir.constants["EVEN"] for c in scale.cache.values()}
    assert even_values == {True, False}  # n=64 divides every BLOCK, n=70 none
    assert tuned.base_fn is scale.fn and tuned.fn.base_fn is scale.fn  # Triton's name, through both
    assert tuned.base_fn.__name__ == "scale_kernel"


def test_heuristics_alone_and_launch_conflicts():
    even = tiles.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(kernels.scale_kernel)
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    even[(1,)](x, out, 10, BLOCK=16)
    np.testing.assert_array_equal(out, 3 * x)
    with pytest.raises(ValueError, match="BLOCK"):
        make_tuned_add()[grid_for(10)](x, x, out, 10, BLOCK=16)


def test_stacked_heuristics_run_outermost_first_and_see_earlier_values():
    seen = []

    @tiles.heuristics({"SCALE": lambda args: seen.append(("outer", args["BLOCK"], "SCALE" in args)) or 2.0})
    @tiles.heuristics({"BLOCK": lambda args: seen.append(("middle", args["n"], args["SCALE"])) or 16})
    @tiles.heuristics({"SCALE": lambda args: seen.append(("inner", args["BLOCK"], args["SCALE"])) or args["SCALE"] + 1})
    @tiles.jit
    def scaled(x_ptr, out_ptr, n, SCALE: tiles.constexpr, BLOCK: tiles.constexpr = 8):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * SCALE, mask=m)

    assert isinstance(scaled.fn, tiles.JITFunction)  # the stack is one layer
    assert list(scaled.values) == ["SCALE", "BLOCK"]
    n = 37
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    scaled[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, out_ptr=out, n=n)
    # the outer rule sees the default BLOCK; the inner SCALE rule sees the outer value and wins
    assert seen == [("outer", 8, False), ("middle", n, 2.0), ("inner", 16, 2.0)]
    np.testing.assert_array_equal(out, x * np.float32(3.0))


def test_steady_launches_of_tuned_and_heuristic_kernels_skip_the_general_binding(monkeypatch):
    @tiles.autotune(configs=[tiles.Config({"BLOCK": 16}), tiles.Config({"BLOCK": 32}, num_warps=2)], key=["n"])
    @tiles.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @tiles.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)

    jit_fn = scale.fn.fn
    general = []
    run = jit_fn._run
    monkeypatch.setattr(jit_fn, "_run", lambda *a, **k: general.append(1) or run(*a, **k))
    n = 45
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    for _ in range(3):
        out = np.full(n, np.nan, np.float32)
        scale[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, out, n)
        np.testing.assert_array_equal(out, 2 * x)
    tuning = len(general)
    for _ in range(3):
        scale[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert len(general) == tuning, "a tuned launch took the general binding path (a stray launch keyword?)"


def test_prune_configs_by():
    estimates = []

    def perf_model(**kw):
        estimates.append(kw["BLOCK"])
        return -kw["BLOCK"]  # prefers large blocks

    def early(configs, named, **kwargs):
        return [c for c in configs if c.kwargs["BLOCK"] <= named["n"]]
    tuned = make_tuned_add(blocks=(16, 32, 64, 128),
                           prune_configs_by={"early_config_prune": early, "perf_model": perf_model,
                                             "top_k": 2})
    x, y, out = arrays(64)
    tuned[grid_for(64)](x, y, out, 64)
    assert sorted(estimates) == [16, 32, 64]
    assert {c.kwargs["BLOCK"] for c in tuned.configs_timings} == {32, 64}


def test_print_and_progress(monkeypatch, capsys):
    monkeypatch.setenv("TILES_PRINT_AUTOTUNING", "1")
    monkeypatch.setenv("TILES_PROGRESS", "1")
    tuned = make_tuned_add(blocks=(16, 32, 64, 128))
    x, y, out = arrays(64)
    tuned[grid_for(64)](x, y, out, 64)
    captured = capsys.readouterr()
    assert f"best config: {tuned.best_config}" in captured.out
    assert "autotuned add_kernel over 4 configs" in captured.err


def test_results_persist_on_disk():
    calls = []

    def fake_bench(fn):
        fn()
        calls.append(1)
        return float(len(calls))  # the first config is the fastest
    x, y, out = arrays(64)
    first = make_tuned_add(cache_results=True, do_bench=fake_bench)
    first[grid_for(64)](x, y, out, 64)
    assert len(calls) == len(BLOCKS) and first.best_config.kwargs == {"BLOCK": BLOCKS[0]}
    second = make_tuned_add(cache_results=True, do_bench=fake_bench)
    out[:] = 0
    second[grid_for(64)](x, y, out, 64)
    assert len(calls) == len(BLOCKS)  # nothing timed: read from the disk
    assert second.best_config == first.best_config
    assert second.configs_timings == first.configs_timings
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_autotuner_warmup_compiles_every_config():
    tuned = make_tuned_add()
    x, y, out = arrays(64)
    compiled = tuned.warmup(x, y, out, 64)
    assert sorted(c.ir.constants["BLOCK"] for c in compiled) == list(BLOCKS)
