"""tiles.testing: do_bench, assert_close, perf_report."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tiles import testing


def sleep_ms(ms):
    return lambda: time.sleep(ms / 1e3)


def test_do_bench_measures_milliseconds():
    median = testing.do_bench(sleep_ms(2), warmup=2, rep=20, device="cpu")
    assert 1.9 <= median < 20


def test_do_bench_modes_and_quantiles():
    calls = []
    times = testing.do_bench(lambda: calls.append(1), warmup=1, rep=1, return_mode="all", device="cpu")
    assert isinstance(times, list) and len(times) >= 1 and len(calls) > len(times)
    q = testing.do_bench(sleep_ms(1), warmup=1, rep=10, quantiles=[0.2, 0.5, 0.8], device="cpu")
    assert len(q) == 3 and q[0] <= q[1] <= q[2]
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(lambda: None, return_mode="average")


def test_do_bench_resets_grads():
    class Param:
        grad = "stale"
    p = Param()
    testing.do_bench(lambda: None, warmup=1, rep=1, grad_to_none=[p], device="cpu")
    assert p.grad is None


def test_assert_close_accepts_within_tolerance_and_matching_nans():
    testing.assert_close(np.array([1.0, np.nan, np.inf]), np.array([1.005, np.nan, np.inf]))
    testing.assert_close(np.float32(2.0), 2.0, atol=0, rtol=0)
    testing.assert_close(np.array([1000.0]), np.array([1001.0]), atol=0, rtol=1e-2)


def test_assert_close_reports_count_worst_index_and_values():
    expected = np.zeros((3, 4), np.float32)
    actual = expected.copy()
    actual[1, 2] = 5.0
    actual[2, 3] = 0.5
    with pytest.raises(AssertionError) as info:
        testing.assert_close(actual, expected, atol=1e-3)
    message = str(info.value)
    assert "2 of 12 elements differ" in message
    assert "(1, 2)" in message and "5.0" in message


@pytest.mark.parametrize("actual, expected", [
    (np.array([np.nan]), np.array([1.0])),
    (np.array([np.inf]), np.array([-np.inf])),
    (np.array([2**62 + 1], np.int64), np.array([2**62], np.int64)),
    (np.zeros(3), np.zeros(4)),
])
def test_assert_close_rejects(actual, expected):
    with pytest.raises(AssertionError):
        testing.assert_close(actual, expected, atol=0, rtol=0)


def test_perf_report_prints_a_table_and_saves(tmp_path, capsys):
    @testing.perf_report(testing.Benchmark(
        x_names=["size"], x_vals=[1, 2, 4], line_arg="impl", line_vals=["a", "b"],
        line_names=["A", "B"], ylabel="ms", plot_name="toy", args={"scale": 10}))
    def bench(size, impl, scale):
        return size * scale if impl == "a" else float(-size)

    tables = bench.run(print_data=True, save_path=str(tmp_path))
    out = capsys.readouterr().out
    assert "toy:" in out and "size" in out.splitlines()[1] and "A" in out
    assert tables[0][1] == [[1, 10, -1.0], [2, 20, -2.0], [4, 40, -4.0]]
    assert (tmp_path / "toy.csv").read_text().splitlines()[:2] == ["size,A,B", "1,10,-1.0"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "toy.png").exists()
