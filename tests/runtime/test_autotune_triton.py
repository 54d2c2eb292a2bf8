"""Autotune, Config and heuristics with Triton's semantics (hooks, do_bench, pruning, printing)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import rt_kernels as kernels

import tiles
from tiles.runtime.autotune import AutotuneError, Autotuner


def grid_for(n):
    return lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)


def inputs(n, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.zeros(n, np.float32))


def ranked_bench(order):
    """A do_bench that ranks configs by ``order`` of their BLOCK (Triton's signature, with quantiles)."""
    calls = []

    def do_bench(kernel_call, quantiles):
        kernel_call()
        calls.append(quantiles)
        return [float(order.index(_current_block[0])), 0.0, 0.0]
    return do_bench, calls


_current_block = [0]


def test_config_matches_triton():
    config = tiles.Config({"BLOCK": 64}, num_warps=8, num_stages=2, num_ctas=1, maxnreg=128)
    assert config.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": 128}
    assert str(config) == "BLOCK: 64, num_warps: 8, num_ctas: 1, num_stages: 2, maxnreg: 128"
    assert tiles.Config({"BLOCK": 64}).all_kwargs() == {"BLOCK": 64, "num_warps": 4, "num_ctas": 1,
                                                        "num_stages": 3}
    hook = lambda nargs: None  # noqa: E731
    assert tiles.Config({"B": 1}, pre_hook=hook) != tiles.Config({"B": 1})
    assert len({tiles.Config({"B": 1}), tiles.Config({"B": 1})}) == 1


def test_autotuner_takes_tritons_constructor_arguments():
    configs = [tiles.Config({"BLOCK": b}) for b in (16, 32)]
    tuner = Autotuner(kernels.add_kernel, kernels.add_kernel.arg_names, configs, ["n"], None, None,
                      prune_configs_by=None, do_bench=lambda fn, quantiles: [1.0, 1.0, 1.0])
    x, y, out = inputs(40, seed=20)
    tuner[grid_for(40)](x, y, out, 40)
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
    with pytest.raises(ValueError, match="key names nn, not among its parameters"):
        Autotuner(kernels.add_kernel, kernels.add_kernel.arg_names, configs, ["nn"], None, None)


def test_do_bench_gets_quantiles_and_the_median_ranks():
    def hook(nargs):
        _current_block[0] = nargs["BLOCK"]
    configs = [tiles.Config({"BLOCK": b}, pre_hook=hook) for b in (16, 32, 64)]
    do_bench, calls = ranked_bench([32, 64, 16])
    tuned = tiles.autotune(configs, key=["n"], do_bench=do_bench)(kernels.add_kernel)
    x, y, out = inputs(100, seed=21)
    tuned[grid_for(100)](x, y, out, 100)
    assert calls == [(0.5, 0.2, 0.8)] * 3
    assert tuned.best_config.kwargs == {"BLOCK": 32}
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


@pytest.mark.parametrize("graphs", [False, True])
def test_use_cuda_graph_times_with_do_bench_cudagraph(monkeypatch, graphs):
    from tiles import testing
    seen = []
    monkeypatch.setattr(testing, "do_bench", lambda fn, **kw: seen.append(("do_bench", kw)) or [1.0, 1.0, 1.0])
    monkeypatch.setattr(testing, "do_bench_cudagraph",
                        lambda fn, **kw: seen.append(("cudagraph", kw)) or [1.0, 1.0, 1.0])
    tuner = Autotuner(kernels.add_kernel, kernels.add_kernel.arg_names, [tiles.Config({"BLOCK": 16})], ["n"],
                      None, None, rep=7, use_cuda_graph=graphs)
    tuner._time(lambda: None)
    expected = {"rep": 7, "quantiles": (0.5, 0.2, 0.8)}
    assert seen == ([("cudagraph", expected)] if graphs else [("do_bench", {"warmup": 25, **expected})])


def test_user_hooks_replace_reset_to_zero_and_see_exceptions():
    events = []

    def pre_hook(nargs, reset_only=False):
        events.append(("pre", reset_only))
        nargs["total_ptr"][...] = 0

    def post_hook(nargs, exception):
        events.append(("post", exception))
    tuned = tiles.autotune([tiles.Config({"BLOCK": b}) for b in (16, 32)], key=["n"], reset_to_zero=["total_ptr"],
                           pre_hook=pre_hook, post_hook=post_hook,
                           do_bench=lambda fn, quantiles: (fn(), [1.0])[1])(kernels.sum_kernel)
    x = np.random.default_rng(22).standard_normal(70).astype(np.float32)
    total = np.zeros(1, np.float32)
    tuned[grid_for(70)](x, total, 70)
    assert events == [("pre", False), ("post", None)] * 2 + [("pre", True)]
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-5)


def test_post_hook_receives_the_launch_error():
    seen = []
    bad = np.zeros(4, np.float32)
    bad.flags.writeable = False  # refused at launch: the hook must see the error, then it propagates
    tuned = tiles.autotune([tiles.Config({"BLOCK": b}) for b in (16, 32)], key=["n"],
                           post_hook=lambda nargs, exception: seen.append(exception),
                           do_bench=lambda fn, quantiles: (fn(), [1.0])[1])(kernels.increment_kernel)
    with pytest.raises(tiles.LaunchError, match="read-only"):
        tuned[grid_for(4)](bad, 4)
    assert len(seen) == 1 and isinstance(seen[0], tiles.LaunchError)


def test_single_config_after_pruning_is_not_timed():
    timed = []
    tuned = tiles.autotune([tiles.Config({"BLOCK": b}) for b in (16, 32, 64)], key=["n"],
                           prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[-1:]},
                           do_bench=lambda fn, quantiles: timed.append(1) or [1.0])(kernels.add_kernel)
    x, y, out = inputs(50, seed=23)
    tuned[grid_for(50)](x, y, out, 50)
    assert not timed and tuned.best_config.kwargs == {"BLOCK": 64}
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
    empty = tiles.autotune([tiles.Config({"BLOCK": b}) for b in (16, 32)], key=["n"],
                           prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: []})(kernels.add_kernel)
    with pytest.raises(AutotuneError, match="returned no configuration"):
        empty[grid_for(50)](x, y, out, 50)


def test_failed_configs_are_printed_with_their_reason(monkeypatch, capsys):
    monkeypatch.setenv("TILES_PRINT_AUTOTUNING", "1")
    configs = [tiles.Config({"BLOCK": 16}, num_warps=3), tiles.Config({"BLOCK": 32})]
    tuned = tiles.autotune(configs, key=["n"], do_bench=lambda fn, quantiles: (fn(), [1.0])[1])(kernels.add_kernel)
    x, y, out = inputs(40, seed=24)
    tuned[grid_for(40)](x, y, out, 40)
    printed = capsys.readouterr().out
    assert f"tiles autotuning add_kernel with config {configs[0]}" in printed
    assert f"config {configs[0]} failed: LaunchError:" in printed and "num_warps must be a power of two" in printed
    assert tuned.best_config == configs[1]
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


def test_launch_options_pass_through_autotune_and_heuristics():
    tuned = tiles.autotune([tiles.Config({"BLOCK": 32}, num_ctas=1, maxnreg=64)], key=["n"])(
        tiles.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(kernels.scale_kernel))
    x = np.random.default_rng(25).standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    compiled = tuned.run(x, out, 64, grid=(2,), warmup=True, launch_pdl=True)
    assert not out.any() and compiled.ir.constants["EVEN"] is True
    tuned[(2,)](x, out, 64, enable_fp_fusion=False)
    np.testing.assert_array_equal(out, x * 3)


def test_concurrent_first_launches_tune_once():
    timed = []
    lock = threading.Lock()

    def do_bench(fn, quantiles):
        with lock:
            timed.append(1)
        fn()
        return [1.0]
    tuned = tiles.autotune([tiles.Config({"BLOCK": b}) for b in (16, 32)], key=["n"],
                           do_bench=do_bench)(kernels.add_kernel)
    x, y, _ = inputs(64, seed=26)
    outs = [np.zeros(64, np.float32) for _ in range(6)]
    errors = []

    def launch(out):
        try:
            tuned[grid_for(64)](x, y, out, 64)
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=launch, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(timed) == 2
    for out in outs:
        np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


def test_pruning_with_keyword_arguments_and_launch_options():
    seen = []

    def perf_model(**kw):
        seen.append((kw["n"], kw["BLOCK"], kw["num_warps"]))
        return kw["BLOCK"]  # prefers small blocks
    tuned = tiles.autotune([tiles.Config({"BLOCK": b}, num_warps=w) for b, w in ((16, 1), (32, 2), (64, 4))],
                           key=["n"], prune_configs_by={"perf_model": perf_model, "top_k": 2},
                           do_bench=lambda fn, quantiles: (fn(), [1.0])[1])(kernels.add_kernel)
    x, y, out = inputs(90, seed=27)
    tuned[grid_for(90)](x, y, out, n=90, num_ctas=1, launch_pdl=False)
    assert sorted(seen) == [(90, 16, 1), (90, 32, 2), (90, 64, 4)]
    assert set(tuned.configs_timings) == {tuned.configs[0], tuned.configs[1]}
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
