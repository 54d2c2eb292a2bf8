"""tiles.testing: do_bench, assert_close, perf_report (pandas and matplotlib optional)."""

from __future__ import annotations

import statistics
import sys
import time
import types

import numpy as np
import pytest

from tiles import testing


def sleep_ms(ms):
    return lambda: time.sleep(ms / 1e3)


class FakeTimer:
    """Hands out ``times`` one per timed call, and counts flushes."""

    def __init__(self, times):
        self.times, self.timed, self.flushes = list(times), 0, 0

    def synchronize(self):
        pass

    def flush_cache(self):
        self.flushes += 1

    def time_ms(self, fn):
        fn()
        self.timed += 1
        return self.times[(self.timed - 1) % len(self.times)]


@pytest.fixture
def fake_clock(monkeypatch):
    """Each call of the benchmarked function takes 2**-9 s (1.953125 ms, exact in binary) of a fake clock."""
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(testing, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))

    def call():
        clock.now += 2.0**-9
        clock.calls += 1
    clock.calls = 0
    clock.call = call
    return clock


def test_do_bench_budgets_calls_like_triton_and_defaults_to_the_mean(monkeypatch, fake_clock, rng):
    times = list(rng.uniform(0.5, 3.0, size=7))
    timer = FakeTimer(times)
    monkeypatch.setattr(testing, "_pick_timer", lambda device: timer)
    result = testing.do_bench(fake_clock.call)            # warmup=25 ms, rep=100 ms; 1.95 ms a call
    assert fake_clock.calls == 1 + 5 + 12 + 51            # first call, estimate, warm-up, timed
    assert timer.timed == 51 and timer.flushes == 5 + 51  # the cache is flushed before each call timed
    timed = [times[i % 7] for i in range(51)]
    assert result == pytest.approx(statistics.mean(timed))


@pytest.mark.parametrize("mode, summary", [
    ("mean", statistics.mean), ("median", statistics.median), ("min", min), ("max", max), ("all", list)])
def test_do_bench_return_modes(monkeypatch, fake_clock, rng, mode, summary):
    times = list(rng.uniform(0.5, 3.0, size=10))
    monkeypatch.setattr(testing, "_pick_timer", lambda device: FakeTimer(times))
    assert testing.do_bench(fake_clock.call, warmup=2, rep=20, return_mode=mode) == summary(times)  # 10 calls


def test_do_bench_quantiles_interpolate_linearly(monkeypatch, fake_clock):
    monkeypatch.setattr(testing, "_pick_timer", lambda device: FakeTimer([4.0, 1.0, 3.0, 2.0, 5.0]))
    q = testing.do_bench(fake_clock.call, warmup=2, rep=10, quantiles=[0.5, 0.2, 0.8, 0.1])
    assert q == pytest.approx([3.0, 1.8, 4.2, 1.4])  # sorted 1..5: position q * 4, interpolated
    assert testing.do_bench(fake_clock.call, warmup=2, rep=10, quantiles=[0.5]) == pytest.approx(3.0)
    with pytest.raises(ValueError, match=r"quantiles must be in \[0, 1\]"):
        testing.do_bench(fake_clock.call, warmup=2, rep=10, quantiles=[1.5])


def test_do_bench_measures_milliseconds_on_the_cpu():
    mean = testing.do_bench(sleep_ms(2), warmup=2, rep=20, device="cpu")
    assert 1.9 <= mean < 20


def test_do_bench_rejects_unknown_modes_and_resets_grads():
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(lambda: None, return_mode="average")

    class Param:
        grad = "stale"
    p = Param()
    testing.do_bench(lambda: None, warmup=1, rep=1, grad_to_none=[p], device="cpu")
    assert p.grad is None


def test_do_bench_cudagraph_without_cuda_torch_is_do_bench(monkeypatch, fake_clock, rng):
    times = list(rng.uniform(0.5, 3.0, size=10))
    monkeypatch.setattr(testing, "_pick_timer", lambda device: FakeTimer(times))
    no_gpu = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", no_gpu)
    assert testing.do_bench_cudagraph(fake_clock.call, rep=20, return_mode="median") == statistics.median(times)
    assert fake_clock.calls == 1 + 5 + 12 + 10  # do_bench's default warm-up budget, then rep=20 ms
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench_cudagraph(fake_clock.call, return_mode="average")


# ---------------------------------------------------------------- assert_close


def test_assert_close_accepts_within_tolerance_and_matching_nans():
    testing.assert_close(np.array([1.0, np.nan, np.inf]), np.array([1.005, np.nan, np.inf]))
    testing.assert_close(np.float32(2.0), 2.0, atol=0, rtol=0)
    testing.assert_close(np.array([1000.0]), np.array([1001.0]), atol=0, rtol=1e-2)
    testing.assert_close(np.zeros(3), 0.0)  # a scalar is compared with every element


def test_assert_close_takes_tolerances_as_functions_of_the_dtype():
    seen = []

    def atol(dtype):
        seen.append(dtype)
        return 0.1
    testing.assert_close(np.array([1.0, 2.0], np.float32), np.array([1.0, 2.05], np.float32), atol=atol)
    assert seen == [np.float32]
    with pytest.raises(AssertionError):
        testing.assert_close(np.array([2.0]), np.array([2.05]), atol=lambda dtype: 0.01)


def test_assert_close_reports_count_worst_index_and_values():
    expected = np.zeros((3, 4), np.float32)
    actual = expected.copy()
    actual[1, 2] = 5.0
    actual[2, 3] = 0.5
    with pytest.raises(AssertionError) as info:
        testing.assert_close(actual, expected, atol=1e-3, err_msg="layer 3: ")
    message = str(info.value)
    assert message.startswith("layer 3: 2 of 12 elements differ")
    assert "(1, 2)" in message and "5.0" in message


@pytest.mark.parametrize("actual, expected", [
    (np.array([np.nan]), np.array([1.0])),
    (np.array([np.inf]), np.array([-np.inf])),
    (np.array([2**62 + 1], np.int64), np.array([2**62], np.int64)),
    (np.zeros(3), np.zeros(4)),
    (np.zeros(3), np.zeros(1)),
    (np.zeros((2, 3)), np.zeros(3)),
])
def test_assert_close_rejects(actual, expected):
    with pytest.raises(AssertionError):
        testing.assert_close(actual, expected, atol=0, rtol=0)


# ---------------------------------------------------------------- perf_report


@pytest.fixture
def without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)


@pytest.fixture
def without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)


def make_bench(calls=None, plot_name="toy", **extra):
    @testing.perf_report(testing.Benchmark(
        x_names=["size"], x_vals=[1, 2, 4], line_arg="impl", line_vals=["a", "b"],
        line_names=["A", "B"], ylabel="ms", plot_name=plot_name, args={"scale": 10}, **extra))
    def bench(size, impl, scale, **kwargs):
        if calls is not None:
            calls.append((size, impl, kwargs))
        if impl == "a":
            return float(size * scale), size * scale - 0.5, size * scale + 0.5  # (value, min, max)
        return float(-size)
    return bench


def test_perf_report_prints_saves_and_keeps_min_and_max(tmp_path, capsys, without_pandas, without_matplotlib):
    calls = []
    bench = make_bench(calls)
    assert bench.run(print_data=True, save_path=str(tmp_path), extra=1) is None
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "toy:"
    assert lines[1].split() == ["size", "A", "(ms)", "B", "(ms)"]
    assert lines[2].split() == ["0", "1", "10", "-1"]
    assert "matplotlib is not installed" in captured.err
    assert (tmp_path / "toy.csv").read_text().splitlines() == [
        "size,A (ms),B (ms)", "1,10.000000,-1.000000", "2,20.000000,-2.000000", "4,40.000000,-4.000000"]
    assert '<image src="toy.png"/>' in (tmp_path / "results.html").read_text()
    assert calls[0] == (1, "a", {"extra": 1})  # other keywords of run() reach the function
    table = bench.tables[0]
    assert table.rows == [[1, 10.0, -1.0], [2, 20.0, -2.0], [4, 40.0, -4.0]]
    assert table.low == [[9.5, None], [19.5, None], [39.5, None]]
    assert table.high == [[10.5, None], [20.5, None], [40.5, None]]


def test_perf_report_without_pandas_says_so_before_measuring(without_pandas):
    calls = []
    with pytest.raises(ImportError, match="pandas is not installed: `pip install pandas`"):
        make_bench(calls).run(return_df=True)
    assert calls == []


def test_perf_report_options(tmp_path, without_pandas, without_matplotlib):
    @testing.perf_report(testing.Benchmark(
        x_names=["M", "N"], x_vals=[(8, 16), 32], line_arg="p", line_vals=[1],
        line_names=["one"], plot_name="pairs", args={}))
    def pairs(M, N, p):
        return float(M + N + p)
    pairs.run(save_path=str(tmp_path), diff_col=True, save_precision=2)
    assert (tmp_path / "pairs.csv").read_text().splitlines() == [
        "M,N,one ()", "8,16,25.00", "32,32,65.00"]  # three columns: no Diff

    diffs = make_bench(plot_name="diffs")
    diffs.benchmarks.line_vals, diffs.benchmarks.line_names = ["b"], ["B"]
    diffs.run(save_path=str(tmp_path), diff_col=True)
    assert (tmp_path / "diffs.csv").read_text().splitlines()[:2] == ["size,B (ms),Diff", "1,-1.000000,-2.000000"]

    @testing.perf_report(testing.Benchmark(x_names=["M", "N"], x_vals=[(1, 2, 3)], line_arg="p",
                                           line_vals=[1], line_names=["one"], plot_name="bad"))
    def bad(M, N, p):
        return 0.0
    with pytest.raises(ValueError, match="has 3 values for 2 x_names"):
        bad.run()


def test_perf_report_returns_pandas_frames_and_writes_pandas_csv(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    bench = make_bench(plot_name="frame")
    frame = bench.run(return_df=True, print_data=True, save_path=str(tmp_path / "pandas"))
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["size", "A (ms)", "B (ms)"]
    assert frame.values.tolist() == [[1, 10.0, -1.0], [2, 20.0, -2.0], [4, 40.0, -4.0]]
    assert frame.to_string() in capsys.readouterr().out
    both = testing.Mark(bench.fn, [bench.benchmarks, bench.benchmarks]).run(return_df=True)
    assert isinstance(both, list) and len(both) == 2
    bench.tables[0].write_csv(str(tmp_path / "ours.csv"), 6)  # tiles' own writer, used without pandas
    assert (tmp_path / "ours.csv").read_text() == (tmp_path / "pandas" / "frame.csv").read_text()


def test_plots_are_saved_and_shown_with_the_users_backend(tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    backend = matplotlib.get_backend()
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(plt.gcf()))
    make_bench(plot_name="plot").run(save_path=str(tmp_path), show_plots=True)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(shown) == 1
    assert matplotlib.get_backend() == backend  # nothing forced Agg
